"""What the fake Gemini server rejects, each with the Gemini API's own error text.

``check_request`` returns the first violation as a ``GoogleError`` or None. Thought signatures: a
function call the server signed must come back with exactly that signature (missing: Gemini 3's
"missing a thought_signature" error; changed, truncated or moved to another call: "Corrupted thought
signature."). Google's documented skip-validator placeholders are accepted, as the real API accepts them,
and counted, so a test can tell a real signature from a fallback.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .http_fake import canonical_json
from .signing import Signer

SIGNATURE_DOCS = "https://ai.google.dev/gemini-api/docs/thought-signatures"
_PLACEHOLDER_WORDS = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")
PLACEHOLDERS = frozenset(
    [*_PLACEHOLDER_WORDS, *(base64.b64encode(word.encode()).decode() for word in _PLACEHOLDER_WORDS)]
)
NO_CALLER = (
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or "
    "other form of API consumer identity to call this API."
)


@dataclass(frozen=True)
class GoogleError:
    code: int
    status: str
    message: str

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "status": self.status}}


def invalid(message: str) -> GoogleError:
    return GoogleError(400, "INVALID_ARGUMENT", message)


@dataclass(frozen=True)
class Limits:
    """The model's limits (defaults: gemini-2.5-pro)."""

    context_window: int = 1_048_576
    max_output_tokens: int = 65_536
    thinking_budget_range: tuple[int, int] = (128, 32_768)
    thinking_required: bool = True  # 2.5 Pro cannot turn thinking off
    # Gemini 3 rejects a signed call sent back without its signature; 2.5 accepts it (and reasons worse).
    # Strict by default, so a test proves signatures survive.
    signatures_required: bool = True


# Proto JSON accepts snake_case field names as well as camelCase (litellm sends ``function_call``,
# ``system_instruction``...). The checks read camelCase; only protocol fields are renamed, never the keys
# inside function arguments, responses or schemas.
_CAMEL = {
    "system_instruction": "systemInstruction",
    "generation_config": "generationConfig",
    "max_output_tokens": "maxOutputTokens",
    "thinking_config": "thinkingConfig",
    "thinking_budget": "thinkingBudget",
    "include_thoughts": "includeThoughts",
    "function_declarations": "functionDeclarations",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "thought_signature": "thoughtSignature",
    "cached_content": "cachedContent",
}


def _renamed(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {_CAMEL.get(key, key): value for key, value in mapping.items()}


def normalized(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request with its protocol fields in camelCase."""
    out = _renamed(body)
    config = _renamed(out.get("generationConfig") or {})
    if "thinkingConfig" in config:
        config["thinkingConfig"] = _renamed(config["thinkingConfig"] or {})
    out["generationConfig"] = config
    out["tools"] = [_renamed(tool) for tool in out.get("tools") or [] if isinstance(tool, Mapping)]
    for key in ("contents",):
        out[key] = [
            {**content, "parts": [_renamed(part) for part in parts_of(content)]}
            for content in out.get(key) or []
            if isinstance(content, Mapping)
        ]
    if isinstance(out.get("systemInstruction"), Mapping):
        instruction = out["systemInstruction"]
        out["systemInstruction"] = {**instruction, "parts": [_renamed(part) for part in parts_of(instruction)]}
    return out


def call_key(call: Mapping[str, Any]) -> str:
    return canonical_json({"name": call.get("name"), "args": call.get("args") or {}})


def signature_of(part: Mapping[str, Any]) -> Any:
    return part.get("thoughtSignature", part.get("thought_signature"))


def parts_of(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [part for part in content.get("parts") or [] if isinstance(part, Mapping)]


def check_request(
    query: Mapping[str, str],
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    limits: Limits,
    signer: Signer,
    signed_calls: Mapping[str, str],
    prompt_tokens: int,
    api_key: str | None = None,
) -> GoogleError | None:
    body = normalized(body)
    return (
        _api_key(query, headers, api_key)
        or _contents(body)
        or _generation_config(body, limits)
        or _function_turns(body["contents"])
        or _signatures(body["contents"], signer, signed_calls if limits.signatures_required else {})
        or _context(limits, prompt_tokens)
    )


def _api_key(query: Mapping[str, str], headers: Mapping[str, str], api_key: str | None) -> GoogleError | None:
    key = headers.get("x-goog-api-key") or query.get("key")
    if not key:
        return GoogleError(403, "PERMISSION_DENIED", NO_CALLER)
    if api_key is not None and key != api_key:
        return invalid("API key not valid. Please pass a valid API key.")
    return None


def _contents(body: Mapping[str, Any]) -> GoogleError | None:
    if not body.get("contents"):
        return invalid("* GenerateContentRequest.contents: contents is not specified\n")
    return None


def _generation_config(body: Mapping[str, Any], limits: Limits) -> GoogleError | None:
    config = body.get("generationConfig") or {}
    maximum = config.get("maxOutputTokens")
    if maximum is not None and not 1 <= maximum <= limits.max_output_tokens:
        return invalid(
            f"Unable to submit request because it has a maxOutputTokens value of {maximum} but the supported "
            f"range is from 1 (inclusive) to {limits.max_output_tokens + 1} (exclusive). Update the value and "
            "try again."
        )
    budget = (config.get("thinkingConfig") or {}).get("thinkingBudget")
    if budget is None or budget == -1:  # -1: the model decides
        return None
    if budget == 0 and limits.thinking_required:
        return invalid("Budget 0 is invalid. This model only works in thinking mode.")
    low, high = limits.thinking_budget_range
    if budget != 0 and not low <= budget <= high:
        return invalid(f"The thinking budget ({budget}) is invalid.")
    return None


def _is_user_side(content: Mapping[str, Any]) -> bool:
    return content.get("role", "user") in ("user", "function")


def _function_turns(contents: Sequence[Mapping[str, Any]]) -> GoogleError | None:
    for i, content in enumerate(contents):
        parts = parts_of(content)
        calls = sum("functionCall" in part for part in parts)
        responses = sum("functionResponse" in part for part in parts)
        previous = contents[i - 1] if i > 0 else None
        if calls and (previous is None or not _is_user_side(previous)):
            return invalid(
                "Please ensure that function call turn comes immediately after a user turn or after a function "
                "response turn."
            )
        if responses and (previous is None or not any("functionCall" in part for part in parts_of(previous))):
            return invalid("Please ensure that function response turn comes immediately after a function call turn.")
        if calls:
            following = contents[i + 1] if i + 1 < len(contents) else {}
            answered = sum("functionResponse" in part for part in parts_of(following))
            if answered != calls:
                return invalid(
                    "Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn."
                )
    return None


def _signatures(
    contents: Sequence[Mapping[str, Any]], signer: Signer, signed_calls: Mapping[str, str]
) -> GoogleError | None:
    for i, content in enumerate(contents):
        if content.get("role") != "model":
            continue
        for part in parts_of(content):
            signature = signature_of(part)
            call = part.get("functionCall")
            if signature in PLACEHOLDERS:
                continue
            if signature is not None:
                if not isinstance(call, Mapping) or not signer.verify_call(call, signature):
                    return invalid("Corrupted thought signature.")
            elif isinstance(call, Mapping) and call_key(call) in signed_calls:
                return invalid(
                    "Function call is missing a thought_signature in functionCall parts. This is required for "
                    "tools to work correctly, and missing thought_signature may lead to degraded model "
                    f"performance. Additional data, function call `default_api:{call.get('name')}` , position "
                    f"{i + 1}. Please refer to {SIGNATURE_DOCS} for more details."
                )
    return None


def _context(limits: Limits, prompt_tokens: int) -> GoogleError | None:
    if prompt_tokens > limits.context_window:
        return invalid(
            f"The input token count ({prompt_tokens}) exceeds the maximum number of tokens allowed "
            f"({limits.context_window})."
        )
    return None


def uses_placeholder(body: Mapping[str, Any]) -> bool:
    """Whether any part carries a skip-validator placeholder instead of a real signature."""
    return any(
        signature_of(part) in PLACEHOLDERS for content in body.get("contents") or [] for part in parts_of(content)
    )
