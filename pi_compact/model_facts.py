"""A model's facts, however they were learned: one value every layer reads (imports only the provider table).

``ModelInfo`` is filled in one place (``llm.resolve``) from the provider table (``providers``), pi's
``models.json``, the ``models`` settings and litellm's model data; the window plan
(``compaction.window``), the request builders and the summary engines read it and nothing else. ``Compat``
holds the ``compat`` flags of a ``models.json`` provider or model as written (None: pi's own detection from
the provider and its URL decides). ``headers`` are the request headers as written (a value may name an
environment variable or start with ``!`` for a command); the model layer resolves them when it builds the
model, as it does the API key, so no secret lives in this record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from pi_compact.providers import pi_api


@dataclass(frozen=True)
class Compat:
    """pi 0.73.1's ``compat`` flags (``models.json``), by its names in snake case; None: not set.

    Chat completions: ``supportsStore`` .. ``supportsLongCacheRetention``; the Responses API:
    ``sendSessionIdHeader`` and ``supportsLongCacheRetention``; Anthropic's Messages API:
    ``supportsEagerToolInputStreaming`` and ``supportsLongCacheRetention``. The routing objects are kept as
    canonical JSON text, so the value stays hashable.
    """

    supports_store: bool | None = None
    supports_developer_role: bool | None = None
    supports_reasoning_effort: bool | None = None
    supports_usage_in_streaming: bool | None = None
    max_tokens_field: str | None = None  # "max_tokens" | "max_completion_tokens"
    requires_tool_result_name: bool | None = None
    requires_assistant_after_tool_result: bool | None = None
    requires_thinking_as_text: bool | None = None
    requires_reasoning_content_on_assistant_messages: bool | None = None
    thinking_format: str | None = None  # openai | openrouter | deepseek | zai | qwen | qwen-chat-template
    open_router_routing: str | None = None  # JSON object
    vercel_gateway_routing: str | None = None  # JSON object
    zai_tool_stream: bool | None = None
    supports_strict_mode: bool | None = None
    cache_control_format: str | None = None  # "anthropic"
    send_session_affinity_headers: bool | None = None
    supports_long_cache_retention: bool | None = None
    send_session_id_header: bool | None = None
    supports_eager_tool_input_streaming: bool | None = None

    def over(self, base: Compat) -> Compat:
        """These flags merged over ``base`` (a model's ``compat`` over its provider's)."""
        return Compat(**{f.name: base_value if (value := getattr(self, f.name)) is None else value
                         for f in fields(self) for base_value in (getattr(base, f.name),)})


# pi's camelCase key of each flag (``models.json``), for the parser and for messages naming a key.
COMPAT_KEYS: Mapping[str, str] = {
    "supportsStore": "supports_store",
    "supportsDeveloperRole": "supports_developer_role",
    "supportsReasoningEffort": "supports_reasoning_effort",
    "supportsUsageInStreaming": "supports_usage_in_streaming",
    "maxTokensField": "max_tokens_field",
    "requiresToolResultName": "requires_tool_result_name",
    "requiresAssistantAfterToolResult": "requires_assistant_after_tool_result",
    "requiresThinkingAsText": "requires_thinking_as_text",
    "requiresReasoningContentOnAssistantMessages": "requires_reasoning_content_on_assistant_messages",
    "thinkingFormat": "thinking_format",
    "openRouterRouting": "open_router_routing",
    "vercelGatewayRouting": "vercel_gateway_routing",
    "zaiToolStream": "zai_tool_stream",
    "supportsStrictMode": "supports_strict_mode",
    "cacheControlFormat": "cache_control_format",
    "sendSessionAffinityHeaders": "send_session_affinity_headers",
    "supportsLongCacheRetention": "supports_long_cache_retention",
    "sendSessionIdHeader": "send_session_id_header",
    "supportsEagerToolInputStreaming": "supports_eager_tool_input_streaming",
}


@dataclass(frozen=True)
class ModelInfo:
    """What the agent knows about a model.

    ``model`` is the litellm model string; ``provider`` is pi's name for its provider (``providers``).
    """

    model: str
    provider: str
    context_window: int
    max_output_tokens: int | None
    reasoning: bool = False
    # Where ``context_window`` came from: "flag", "settings", "learned" (a provider's overflow error,
    # ``learned``) or "litellm" (its model data); shown by ``/context``.
    window_source: str = field(default="litellm", compare=False)  # not part of what the model *is*
    # How requests are worded, for a model of pi's ``models.json`` (``custom_models.py``): its ``api``
    # (None: pi's api of ``provider``), the role of the system prompt ("developer" where pi sends it),
    # whether ``reasoning_effort`` may be sent (None: whenever a level is asked; litellm drops it where
    # unknown), and its prices in dollars per token (None: litellm's table).
    wire_api: str | None = field(default=None, compare=False)
    system_role: str = field(default="system", compare=False)
    reasoning_effort: bool | None = field(default=None, compare=False)
    costs: Mapping[str, float] | None = field(default=None, compare=False)
    # The server's own words for an overflow, beside the known ones (``overflow.py``): settings'
    # ``models.<name>.overflowTexts`` and models.json's ``overflowTexts``.
    overflow_texts: tuple[str, ...] = field(default=(), compare=False)
    # models.json's ``compat`` (the model's over its provider's) and its request headers as written
    # (provider's, then the model's: a later name wins), resolved by the model layer.
    compat: Compat = field(default=Compat(), compare=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    # How the provider compacts a conversation on its side for this model (None: it does not): the
    # provider row's ``server_compaction``, which a summary engine may choose by (issue 45).
    server_compaction: str | None = field(default=None, compare=False)

    @property
    def model_id(self) -> str:
        """The model's name without the provider prefix, as pi records it in assistant messages.

        The prefix is litellm's spelling, which ``provider`` (pi's spelling) need not repeat:
        ``gemini/gemini-2.5-pro`` is provider ``google``, id ``gemini-2.5-pro``.
        """
        return self.model.split("/", 1)[1] if "/" in self.model else self.model

    @property
    def api(self) -> str:
        """pi's name for the wire protocol of this model's replies (``providers.pi_api``)."""
        return self.wire_api or pi_api(self.provider)

    def is_same_model(self, provider: object, model: object) -> bool:
        """Does an assistant message's ``provider``/``model`` name this model?"""
        return model in (self.model, self.model_id) and provider in (None, self.provider)


__all__ = ["COMPAT_KEYS", "Compat", "ModelInfo"]
