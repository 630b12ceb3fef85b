"""resolve_model / create_model: which model, which context window, which endpoint."""

from __future__ import annotations

import pytest
from scripted_server import Reply, ScriptedServer

from pi_compact.errors import ConfigError
from pi_compact.llm.protocol import ChatRequest, ModelInfo, complete
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.settings import ModelOverride, Settings


def with_models(**overrides: ModelOverride) -> Settings:
    return Settings(models=tuple(overrides.items()))


def test_explicit_model_wins_over_settings_default() -> None:
    settings = Settings(default_provider="anthropic", default_model="claude-sonnet-4-5")
    assert resolve_model("openai/gpt-4o", settings=settings).model == "openai/gpt-4o"


def test_default_provider_and_model_are_joined() -> None:
    settings = Settings(default_provider="anthropic", default_model="claude-sonnet-4-5")
    info = resolve_model(None, settings=settings)
    assert (info.model, info.provider) == ("anthropic/claude-sonnet-4-5", "anthropic")


def test_default_model_with_a_provider_prefix_is_used_as_is() -> None:
    settings = Settings(default_provider="anthropic", default_model="openai/gpt-4o")
    assert resolve_model(None, settings=settings).model == "openai/gpt-4o"


def test_no_model_anywhere_with_a_provider_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without any provider key the embedded local model is chosen instead (test_local_model.py).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ConfigError, match=r"No model configured: pass --model \(local: the embedded model\) or set "
                                          "defaultModel"):
        resolve_model(None, settings=Settings())


def test_context_window_comes_from_the_litellm_map() -> None:
    info = resolve_model("openai/gpt-4o", settings=Settings())
    assert (info.context_window, info.max_output_tokens) == (128000, 16384)


def test_bare_model_name_gets_its_provider_from_litellm() -> None:
    info = resolve_model("claude-sonnet-4-5", settings=Settings())
    assert (info.provider, info.context_window, info.reasoning) == ("anthropic", 200000, True)


@pytest.mark.parametrize(
    ("model", "provider", "model_id"),
    [
        ("openai/gpt-4o", "openai", "gpt-4o"),
        ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("gemini/gemini-2.5-pro", "google", "gemini-2.5-pro"),
        ("bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0", "amazon-bedrock",
         "anthropic.claude-3-5-sonnet-20241022-v2:0"),
        ("openrouter/anthropic/claude-sonnet-4", "openrouter", "anthropic/claude-sonnet-4"),
    ],
)
def test_model_is_recorded_by_pis_provider_name_and_id(model: str, provider: str, model_id: str) -> None:
    # What session files record, so that pi finds the same model in its registry when it resumes.
    info = resolve_model(model, context_window=1000, settings=Settings())
    assert (info.provider, info.model_id) == (provider, model_id)


def test_models_override_beats_the_map() -> None:
    settings = with_models(**{"openai/gpt-4o": ModelOverride(context_window=64000, max_tokens=4000)})
    info = resolve_model("openai/gpt-4o", settings=settings)
    assert (info.context_window, info.max_output_tokens) == (64000, 4000)


def test_override_keyed_by_the_bare_name_applies_to_the_prefixed_model() -> None:
    settings = with_models(**{"gpt-4o": ModelOverride(context_window=32000)})
    assert resolve_model("openai/gpt-4o", settings=settings).context_window == 32000


def test_explicit_context_window_beats_the_override() -> None:
    settings = with_models(**{"openai/gpt-4o": ModelOverride(context_window=64000)})
    assert resolve_model("openai/gpt-4o", context_window=50000, settings=settings).context_window == 50000


def test_unknown_model_without_a_window_asks_for_one() -> None:
    with pytest.raises(ConfigError, match=r"--context-window or set models\.openai/my-local\.contextWindow"):
        resolve_model("openai/my-local", api_base="http://127.0.0.1:1/v1", settings=Settings())


def test_unknown_model_with_an_explicit_window_resolves() -> None:
    info = resolve_model("openai/my-local", context_window=8192, settings=Settings())
    assert info == ModelInfo("openai/my-local", "openai", 8192, None, False)


def test_create_model_uses_the_override_api_base(scripted_server: ScriptedServer) -> None:
    settings = with_models(
        **{"openai/scripted": ModelOverride(context_window=4096, api_base=scripted_server.base_url)}
    )
    info = resolve_model("openai/scripted", settings=settings)
    scripted_server.enqueue(Reply(text="via override"))
    model = create_model(info, api_key="test", settings=settings)
    message = complete(model, ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 1}]))
    assert message["content"] == [{"type": "text", "text": "via override"}]
    assert len(scripted_server.requests) == 1
