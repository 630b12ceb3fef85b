"""What the fake Anthropic server rejects, each with the Messages API's own error text.

``check_request`` returns the first violation as an ``ApiError`` (HTTP status, error type, message) or
None. The texts were taken from errors the real API returned in public bug reports (see README.md);
where no report showed the exact wording, the text is modelled on its siblings and README.md says so.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .signing import Signer

TOOL_ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"


@dataclass(frozen=True)
class ApiError:
    status: int
    type: str
    message: str

    def body(self) -> dict[str, Any]:
        """The JSON body the API sends with an error status (also the ``data`` of a stream ``error`` event)."""
        return {
            "type": "error",
            "error": {"type": self.type, "message": self.message},
            "request_id": "req_" + secrets.token_hex(12),
        }


def invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


@dataclass(frozen=True)
class Limits:
    """The model's limits (defaults: Claude Sonnet 4.5)."""

    context_window: int = 200_000
    max_output_tokens: int = 64_000
    max_cache_breakpoints: int = 4
    min_thinking_budget: int = 1024


def content_parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part for part in content or [] if isinstance(part, Mapping)]


def check_request(
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    limits: Limits,
    signer: Signer,
    prompt_tokens: int,
    api_key: str | None = None,
    features: Callable[[Mapping[str, str], Mapping[str, Any]], ApiError | None] | None = None,
) -> ApiError | None:
    # In the API's order: headers, then the schema (``features``: the beta fields' rules), then the
    # conversation; the first failure answers.
    return (
        _headers(headers, api_key)
        or _fields(body, limits)
        or (features(headers, body) if features is not None else None)
        or _thinking_config(headers, body, limits)
        or _extra_inputs(body["messages"])
        or _tool_ids(body["messages"])
        or _tool_pairs(body["messages"])
        or _signatures(body["messages"], signer)
        or _final_assistant_thinking(body)
        or _cache_breakpoints(body, limits)
        or _context(body, limits, prompt_tokens)
    )


def _headers(headers: Mapping[str, str], api_key: str | None) -> ApiError | None:
    key = headers.get("x-api-key")
    if not key:
        return ApiError(401, "authentication_error", "x-api-key header is required")
    if api_key is not None and key != api_key:
        return ApiError(401, "authentication_error", "invalid x-api-key")
    if not headers.get("anthropic-version"):
        return invalid("anthropic-version: header is required")
    return None


def _fields(body: Mapping[str, Any], limits: Limits) -> ApiError | None:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return invalid(f"{name}: Field required")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return invalid("max_tokens: Input should be greater than or equal to 1")
    if max_tokens > limits.max_output_tokens:
        return invalid(
            f"max_tokens: {max_tokens} > {limits.max_output_tokens}, which is the maximum allowed number of "
            f"output tokens for {body['model']}"
        )
    return None


def _thinking_config(headers: Mapping[str, str], body: Mapping[str, Any], limits: Limits) -> ApiError | None:
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int):
        return invalid("thinking.enabled.budget_tokens: Field required")
    if budget < limits.min_thinking_budget:
        return invalid(
            f"thinking.enabled.budget_tokens: Input should be greater than or equal to {limits.min_thinking_budget}"
        )
    # With interleaved thinking the budget spans the whole turn, so it may exceed max_tokens.
    interleaved = INTERLEAVED_BETA in headers.get("anthropic-beta", "")
    if not interleaved and body["max_tokens"] <= budget:
        return invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
            f"{THINKING_DOCS}#max-tokens-and-context-window-size"
        )
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        return invalid("`temperature` may only be set to 1 when thinking is enabled.")
    return None


# The fields each content block accepts; the API refuses any other (other block kinds are not checked).
BLOCK_FIELDS = {
    "text": {"type", "text", "cache_control", "citations"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
}
CACHE_CONTROL_FIELDS = {"type", "ttl"}


def _extra_inputs(messages: Sequence[Mapping[str, Any]]) -> ApiError | None:
    for i, message in enumerate(messages):
        for j, part in enumerate(content_parts(message)):
            kind = str(part.get("type"))
            where = f"messages.{i}.content.{j}.{kind}"
            extra = sorted(set(part) - BLOCK_FIELDS.get(kind, set(part)))
            control = part.get("cache_control")
            if not extra and isinstance(control, Mapping):
                extra = [f"cache_control.ephemeral.{key}" for key in sorted(set(control) - CACHE_CONTROL_FIELDS)]
            if extra:
                return invalid(f"{where}.{extra[0]}: Extra inputs are not permitted")
            if "is_error" in part and not isinstance(part["is_error"], bool):  # the one typed flag we send
                return invalid(f"{where}.is_error: Input should be a valid boolean")
    return None


def _tool_ids(messages: Sequence[Mapping[str, Any]]) -> ApiError | None:
    for i, message in enumerate(messages):
        for j, part in enumerate(content_parts(message)):
            field = {"tool_use": "id", "tool_result": "tool_use_id"}.get(str(part.get("type")))
            if field is None:
                continue
            value = part.get(field)
            if not isinstance(value, str) or not TOOL_ID_PATTERN.match(value):
                return invalid(
                    f"messages.{i}.content.{j}.{part['type']}.{field}: String should match pattern "
                    f"'{TOOL_ID_PATTERN.pattern}'"
                )
    return None


def _tool_pairs(messages: Sequence[Mapping[str, Any]]) -> ApiError | None:
    for i, message in enumerate(messages):
        parts = content_parts(message)
        if message.get("role") == "user":
            previous = content_parts(messages[i - 1]) if i > 0 and messages[i - 1].get("role") == "assistant" else []
            used = {part.get("id") for part in previous if part.get("type") == "tool_use"}
            for j, part in enumerate(parts):
                if part.get("type") == "tool_result" and part.get("tool_use_id") not in used:
                    return invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{part.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message."
                    )
            continue
        ids = [str(part.get("id")) for part in parts if part.get("type") == "tool_use"]
        if not ids:
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = set()
        if following is not None and following.get("role") == "user":
            answered = {
                part.get("tool_use_id") for part in content_parts(following) if part.get("type") == "tool_result"
            }
        missing = [tool_id for tool_id in ids if tool_id not in answered]
        if missing:
            return invalid(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                "in the next message."
            )
    return None


def _signatures(messages: Sequence[Mapping[str, Any]], signer: Signer) -> ApiError | None:
    """Every thinking block anywhere in the history must be byte for byte what this server issued."""
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for j, part in enumerate(content_parts(message)):
            if part.get("type") == "thinking":
                if "signature" not in part:
                    return invalid(f"messages.{i}.content.{j}.thinking.signature: Field required")
                if not signer.verify_thinking(str(part.get("thinking", "")), part.get("signature")):
                    return invalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            elif part.get("type") == "redacted_thinking" and not signer.verify_redacted(part.get("data")):
                return invalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block")
    return None


def _final_assistant_thinking(body: Mapping[str, Any]) -> ApiError | None:
    """With thinking on, the assistant message whose tool_use the last tool_result answers starts with thinking."""
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    messages = body["messages"]
    if not messages or messages[-1].get("role") != "user":
        return None
    if not any(part.get("type") == "tool_result" for part in content_parts(messages[-1])):
        return None
    index = len(messages) - 2
    if index < 0 or messages[index].get("role") != "assistant":
        return None
    parts = content_parts(messages[index])
    first = str(parts[0].get("type")) if parts else "nothing"
    if first in ("thinking", "redacted_thinking"):
        return None
    return invalid(
        f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
        "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding "
        "the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
        "from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation "
        f"at {THINKING_DOCS}"
    )


def count_cache_breakpoints(body: Mapping[str, Any]) -> int:
    """Blocks carrying ``cache_control``: tools, system parts, message parts and blocks inside tool results."""

    def marked(parts: Sequence[Any]) -> int:
        found = 0
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            found += "cache_control" in part and part["cache_control"] is not None
            if part.get("type") == "tool_result" and isinstance(part.get("content"), list):
                found += marked(part["content"])
        return found

    system = body.get("system")
    total = marked(body.get("tools") or []) + (marked(system) if isinstance(system, list) else 0)
    return total + sum(marked(content_parts(message)) for message in body.get("messages") or [])


def _cache_breakpoints(body: Mapping[str, Any], limits: Limits) -> ApiError | None:
    found = count_cache_breakpoints(body)
    if found > limits.max_cache_breakpoints:
        return invalid(
            f"A maximum of {limits.max_cache_breakpoints} blocks with cache_control may be provided. Found {found}."
        )
    return None


def _context(body: Mapping[str, Any], limits: Limits, prompt_tokens: int) -> ApiError | None:
    window = limits.context_window
    if prompt_tokens > window:
        return invalid(f"prompt is too long: {prompt_tokens} tokens > {window} maximum")
    if prompt_tokens + body["max_tokens"] > window:
        return invalid(
            f"input length and `max_tokens` exceed context limit: {prompt_tokens} + {body['max_tokens']} > "
            f"{window}, decrease input length or `max_tokens` and try again"
        )
    return None
