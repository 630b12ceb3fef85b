"""Which adapter serves which model: the direct OpenAI-compatible client or litellm."""

from __future__ import annotations

import pytest

from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.openai.responses import ResponsesModel
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.resolve import create_model
from pi_compact.llm.route import litellm_reason
from pi_compact.settings import ModelOverride, Settings

BASE = "http://127.0.0.1:8080/v1"


def test_an_openai_compatible_model_with_an_api_base_is_served_directly() -> None:
    assert litellm_reason("openai/qwen3-coder", BASE, {}) is None
    assert litellm_reason("openai/local", "https://llm.example.com/v1", {}) is None


@pytest.mark.parametrize(
    ("model", "base", "environ", "reason"),
    [
        ("openai/local", None, {}, "no api base"),
        ("anthropic/claude-sonnet-4-5", BASE, {}, "not an openai/<model> string"),
        ("local", BASE, {}, "not an openai/<model> string"),
        ("openai/local", BASE, {"PI_COMPACT_MODEL_PATH": "litellm"}, "PI_COMPACT_MODEL_PATH=litellm"),
        ("openai/gpt-4o", BASE, {}, "an OpenAI catalog model (litellm applies its request rules)"),
        ("openai/o3-mini", BASE, {}, "an OpenAI catalog model (litellm applies its request rules)"),
        ("openai/my-gpt-5-proxy", BASE, {}, "litellm rewrites requests for this model name"),
        ("openai/local", "http://host/v1?api-version=2", {}, "the api base is not a plain http(s) URL"),
        ("openai/local", "unix:///tmp/sock", {}, "the api base is not a plain http(s) URL"),
        ("openai/local", BASE, {"https_proxy": "http://proxy:3128"}, "HTTPS_PROXY is set"),
        ("openai/local", BASE, {"SSL_VERIFY": "False"}, "SSL_VERIFY is set"),
        ("openai/local", BASE, {"OPENAI_API_KEY": ""}, "OPENAI_API_KEY is set but empty"),
    ],
)
def test_everything_else_stays_on_litellm(model: str, base: str | None, environ: dict[str, str], reason: str) -> None:
    assert litellm_reason(model, base, environ) == reason


def test_create_model_builds_the_direct_client_for_an_api_base_from_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PI_COMPACT_MODEL_PATH", raising=False)
    settings = Settings(models=(("openai/local", ModelOverride(api_base=BASE)),))
    info = ModelInfo("openai/local", "openai", 8000, None)
    assert isinstance(create_model(info, settings=settings), OpenAICompatModel)
    # Without a base URL of the user's, an OpenAI model goes to OpenAI's endpoint, through the Responses API.
    served = create_model(ModelInfo("openai/local", "openai", 8000, None), settings=Settings())
    assert isinstance(served, ResponsesModel) and served.endpoint == "https://api.openai.com/v1"


def test_create_model_honours_the_model_path_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_COMPACT_MODEL_PATH", "litellm")
    info = ModelInfo("openai/local", "openai", 8000, None)
    assert isinstance(create_model(info, api_base=BASE, settings=Settings()), LiteLLMModel)
