"""Both ``ChatModel`` adapters, so a model-seam test can run against each.

``LiteLLMModel`` serves every provider; ``OpenAICompatModel`` serves ``openai/*`` models given an api
base without importing litellm. Both must behave the same against the scripted server: a test module
that takes ``model_path`` (a fixture of ``conftest``) runs once per path and builds its model with
``chat_model``.
"""

from __future__ import annotations

from pi_compact.llm.litellm_model import LiteLLMModel, estimate_stream_usage
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.protocol import ChatModel, ModelInfo
from pi_compact.settings import RetrySettings

PATHS = ("litellm", "direct")


def chat_model(
    path: str, info: ModelInfo, *, api_base: str, api_key: str | None = None, retry: RetrySettings | None = None
) -> ChatModel:
    """The adapter ``path`` names, pointed at ``api_base``."""
    if path == "direct":
        return OpenAICompatModel(info, api_base=api_base, api_key=api_key, retry=retry,
                                 estimate_usage=estimate_stream_usage)  # wired as resolve.create_model does
    return LiteLLMModel(info, api_base=api_base, api_key=api_key, retry=retry)
