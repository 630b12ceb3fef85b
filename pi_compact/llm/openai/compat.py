"""pi's ``compat`` flags for a chat-completions server of ``models.json``, as the body and headers they change (pure).

``Wording`` is what one model's flags ask of each request (``Wording.of(info, api_base)``); ``body_options``
turns a request's planned options into the body's keys after its messages, and ``headers`` the extra headers.
A flag left unset keeps what this client sends without it (what litellm sends: ``max_tokens``,
``stream_options``, no ``store``, no ``strict``), so only a ``models.json`` that sets a flag changes a request:

- ``supportsUsageInStreaming: false``: no ``stream_options`` (the usage is then counted, ``chunks``);
- ``supportsStore: true``: ``store: false``; ``maxTokensField``: the cap under that name;
- ``supportsStrictMode: true``: ``strict: false`` on each tool (pi's default, which a server may refuse);
- ``zaiToolStream``: ``tool_stream: true`` with tools;
- ``thinkingFormat``: how the thinking level is said (``reasoning_effort``; OpenRouter's ``reasoning``;
  DeepSeek's ``thinking`` with the effort; Z.ai's and Qwen's ``enable_thinking``; Qwen's chat template kwargs);
- ``openRouterRouting`` / ``vercelGatewayRouting``: the routing objects, where the base URL is that gateway's;
- ``cacheControlFormat: "anthropic"``: pi's Anthropic cache marks (``cache_marks.chat_cache_marks``);
- ``supportsLongCacheRetention``: with ``PI_CACHE_RETENTION=long``, ``prompt_cache_retention: "24h"`` and the
  session's ``prompt_cache_key`` (unless false);
- ``sendSessionAffinityHeaders``: the session id as ``session_id``, ``x-client-request-id`` and
  ``x-session-affinity``.
The message rules (``requiresToolResultName`` and the like) are the conversion's (``convert.Target``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pi_compact import providers
from pi_compact.llm.protocol import ChatRequest, ModelInfo
from pi_compact.model_facts import Compat

_OFF = (None, "off")


@dataclass(frozen=True)
class Wording:
    """What a model's ``compat`` flags ask of its requests (all unset: the request as this client sends it)."""

    compat: Compat = Compat()
    reasoning: bool = False  # the model reasons (the thinking formats apply only then)
    api_base: str = ""
    declared: bool = False  # a ``models.json`` model: pi's defaults of the flags apply where they add keys

    @classmethod
    def of(cls, info: ModelInfo, api_base: str) -> Wording:
        return cls(info.compat, info.reasoning, api_base, info.wire_api is not None)

    def cache_control(self, retention: str) -> dict[str, str] | None:
        """Anthropic's mark for a server that takes pi's (``cacheControlFormat``); None: no marks."""
        if self.compat.cache_control_format != providers.ANTHROPIC_MARKS or retention == "none":
            return None
        long = retention == "long" and self.compat.supports_long_cache_retention is not False
        return {"type": "ephemeral", **({"ttl": "1h"} if long else {})}

    def body_options(self, request: ChatRequest, planned: Mapping[str, Any], tools: list[dict[str, Any]],
                     retention: str) -> dict[str, Any]:
        """The body's keys after the messages, in litellm's order with pi's additions after them."""
        compat = self.compat
        options: dict[str, Any] = {}
        if planned.get("max_tokens") is not None:
            options[compat.max_tokens_field or "max_tokens"] = planned["max_tokens"]
        if tools:
            options["tools"] = tools
            if compat.zai_tool_stream:
                options["tool_stream"] = True
        options.update(self._thinking(request, planned))
        if planned.get("prompt_cache_key"):
            options["prompt_cache_key"] = planned["prompt_cache_key"]
        long_retention = compat.supports_long_cache_retention
        if retention == "long" and request.session_id and \
                (long_retention or (self.declared and long_retention is None)):
            options["prompt_cache_key"] = request.session_id
            options["prompt_cache_retention"] = "24h"
        if compat.supports_store:
            options["store"] = False
        options["stream"] = True
        if compat.supports_usage_in_streaming is not False:
            options["stream_options"] = {"include_usage": True}
        options.update(self._routing())
        return options

    def strict_tools(self) -> bool:
        """Do the tools carry ``strict: false`` (``supportsStrictMode: true``)?"""
        return self.compat.supports_strict_mode is True

    def headers(self, request: ChatRequest, retention: str) -> dict[str, str]:
        """The headers the flags add: the session id for a server that routes by it."""
        if not self.compat.send_session_affinity_headers or not request.session_id or retention == "none":
            return {}
        return {name: request.session_id for name in ("session_id", "x-client-request-id", "x-session-affinity")}

    def _thinking(self, request: ChatRequest, planned: Mapping[str, Any]) -> dict[str, Any]:
        style = self.compat.thinking_format
        if style in (None, providers.EFFORT_STYLE) or not self.reasoning:
            effort = planned.get("reasoning_effort")
            return {"reasoning_effort": effort} if effort else {}
        level = request.thinking_level
        on = level not in _OFF
        if style in (providers.ZAI_STYLE, providers.QWEN_STYLE):
            return {"enable_thinking": on}
        if style == providers.QWEN_TEMPLATE_STYLE:
            return {"chat_template_kwargs": {"enable_thinking": on, "preserve_thinking": True}}
        if style == providers.DEEPSEEK_STYLE:
            effort = {"reasoning_effort": level} if on else {}
            return {"thinking": {"type": "enabled" if on else "disabled"}, **effort}
        return {"reasoning": {"effort": level if on else "none"}}  # OpenRouter's

    def _routing(self) -> dict[str, Any]:
        compat = self.compat
        if compat.open_router_routing is not None and "openrouter.ai" in self.api_base:
            return {"provider": json.loads(compat.open_router_routing)}
        if compat.vercel_gateway_routing is not None and "ai-gateway.vercel.sh" in self.api_base:
            routing = json.loads(compat.vercel_gateway_routing)
            gateway = {key: routing[key] for key in ("only", "order") if routing.get(key)}
            return {"providerOptions": {"gateway": gateway}} if gateway else {}
        return {}


__all__ = ["Wording"]
