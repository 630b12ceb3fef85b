"""What the fake OpenAI Responses server rejects, each with the API's own error text.

``check_request(headers, body, model, issued)`` returns the first violation as an ``OpenAIError`` (status,
message, ``param``, ``code``) or None. ``issued`` verifies what the server handed out earlier (reasoning
items' ``encrypted_content``). Texts seen in public bug reports are marked so in README.md; the others are
modelled on their siblings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .responses_compaction import CompactionVerifier, check_context_management, check_item, check_previous
from .responses_error import OpenAIError

MAX_ID_LENGTH = 64  # item ids and call ids
ITEM_TYPES = ("message", "reasoning", "function_call", "function_call_output", "compaction", "compaction_trigger")
ID_PREFIXES = {"message": "msg", "reasoning": "rs", "function_call": "fc", "compaction": "cmp"}
USER_PARTS = ("input_text", "input_image", "input_file")
ASSISTANT_PARTS = ("output_text", "refusal")
ROLES = ("user", "assistant", "system", "developer")


@dataclass(frozen=True)
class ModelFacts:
    """What the fake knows of one model: its window, output cap and the efforts it takes (none: no reasoning)."""

    context_window: int = 200_000
    max_output_tokens: int = 100_000
    efforts: tuple[str, ...] = ()

    @property
    def reasoning(self) -> bool:
        return bool(self.efforts)


O_SERIES = ModelFacts(200_000, 100_000, ("low", "medium", "high"))
GPT_5 = ModelFacts(400_000, 128_000, ("minimal", "low", "medium", "high"))
GPT_5_1 = ModelFacts(400_000, 128_000, ("none", "low", "medium", "high"))  # 5.1 dropped "minimal" for "none"
GPT_5_2 = ModelFacts(400_000, 128_000, ("none", "low", "medium", "high", "xhigh"))
CHAT = ModelFacts(128_000, 16_384)


def facts_for(model: str) -> ModelFacts:
    if model.startswith(("o1", "o3", "o4")):
        return O_SERIES
    if model.startswith("gpt-5.1"):
        return GPT_5_1
    if model.startswith("gpt-5."):
        return GPT_5_2
    if model.startswith("gpt-5"):
        return GPT_5
    return CHAT


class Verifier(CompactionVerifier, Protocol):
    def verify_reasoning(self, item_id: str, encrypted: object) -> bool: ...


def check_request(
    headers: Mapping[str, str], body: Any, verifier: Verifier, *, prompt_tokens: int = 0, compact: bool = False
) -> OpenAIError | None:
    """The first thing the real API would refuse in this request (``compact``: one to ``/responses/compact``),
    or None."""
    if not headers.get("authorization", "").startswith("Bearer ") or headers["authorization"] == "Bearer ":
        return OpenAIError(401, "You didn't provide an API key. You need to provide your API key in an "
                                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                           type="invalid_request_error")
    if not isinstance(body, dict):
        return OpenAIError(400, "We could not parse the JSON body of your request.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return OpenAIError(400, "Missing required parameter: 'model'.", "model", "missing_required_parameter")
    facts = facts_for(model)
    error = _check_options(body, facts, model) or check_context_management(body) or check_previous(body, verifier)
    if error is not None:
        return error
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return OpenAIError(400, "Invalid type for 'input': expected one of a string or an array of input items, "
                                "but got an object instead.", "input", "invalid_type")
    key = headers["authorization"].removeprefix("Bearer ")
    error = _check_items(items, body.get("store", True), verifier, (model, key, not compact))
    if error is not None:
        return error
    wanted = prompt_tokens + int(body.get("max_output_tokens") or 0)
    if prompt_tokens > facts.context_window or wanted > facts.context_window + facts.max_output_tokens:
        return OpenAIError(400, "Your input exceeds the context window of this model. Please adjust your input "
                                "and try again.", "input", "context_length_exceeded")
    return None


def _check_options(body: Mapping[str, Any], facts: ModelFacts, model: str) -> OpenAIError | None:
    cap = body.get("max_output_tokens")
    if cap is not None and (not isinstance(cap, int) or cap < 16):
        return OpenAIError(400, f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, "
                                f"but got {cap} instead.", "max_output_tokens", "integer_below_min_value")
    if isinstance(cap, int) and cap > facts.max_output_tokens:
        return OpenAIError(400, f"max_output_tokens is too large: {cap}. This model supports at most "
                                f"{facts.max_output_tokens} completion tokens.", "max_output_tokens")
    reasoning = body.get("reasoning")
    if reasoning is not None:
        effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
        if not facts.reasoning and effort is not None:
            return OpenAIError(400, "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
                               "reasoning.effort", "unsupported_parameter")
        if effort is not None and effort not in facts.efforts:
            return OpenAIError(400, f"Unsupported value: {effort!r} is not supported with the {model!r} model. "
                                    f"Supported values are: {_listed(facts.efforts)}.", "reasoning.effort",
                               "unsupported_value")
    include = body.get("include") or []
    if "reasoning.encrypted_content" in include and not facts.reasoning:
        return OpenAIError(400, "Encrypted content is not supported with this model.", "include",
                           "unsupported_parameter")
    for position, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            continue
        if "function" in tool or not tool.get("name"):
            return OpenAIError(400, f"Missing required parameter: 'tools[{position}].name'.", f"tools[{position}].name",
                               "missing_required_parameter")
    return None


def _check_items(
    items: Sequence[Any], store: object, verifier: Verifier, bound: tuple[str, str, bool]
) -> OpenAIError | None:
    """Every input item; ``bound``: the model and key a compaction item must be for, and whether a
    ``compaction_trigger`` may come."""
    calls: set[str] = set()
    answered: set[str] = set()
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            return OpenAIError(400, f"Invalid type for 'input[{position}]': expected an input item, but got a "
                                    f"{type(item).__name__} instead.", f"input[{position}]", "invalid_type")
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in ITEM_TYPES:
            return OpenAIError(400, f"Invalid value: {kind!r}. Supported values are: {_listed(ITEM_TYPES)}.",
                               f"input[{position}].type", "invalid_value")
        error = _check_ids(position, kind, item)
        if error is None and kind == "message":
            error = _check_message(position, item)
        elif error is None and kind == "reasoning":
            error = _check_reasoning(position, item, items, store, verifier)
        elif error is None and kind in ("compaction", "compaction_trigger"):
            error = check_item(position, item, items, verifier, bound[0], bound[1], trigger_allowed=bound[2])
        elif error is None and kind == "function_call":
            calls.add(str(item.get("call_id")))
        elif error is None and kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in calls:
                error = OpenAIError(400, f"No tool call found for function call output with call_id {call_id}.",
                                    "input")
            answered.add(call_id)
        if error is not None:
            return error
    for call_id in sorted(calls - answered):
        return OpenAIError(400, f"No tool output found for function call {call_id}.", "input")
    return None


def _check_ids(position: int, kind: str, item: Mapping[str, Any]) -> OpenAIError | None:
    for key in ("id", "call_id"):
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            return OpenAIError(400, f"Invalid type for 'input[{position}].{key}': expected a string, but got "
                                    f"{type(value).__name__} instead.", f"input[{position}].{key}", "invalid_type")
        if len(value) > MAX_ID_LENGTH:
            return OpenAIError(400, f"Invalid 'input[{position}].{key}': string too long. Expected a string with "
                                    f"maximum length {MAX_ID_LENGTH}, but got a string with length {len(value)} "
                                    "instead.", f"input[{position}].{key}", "string_above_max_length")
    prefix = ID_PREFIXES.get(kind)
    item_id = item.get("id")
    if prefix and isinstance(item_id, str) and not item_id.startswith(prefix):
        return OpenAIError(400, f"Invalid 'input[{position}].id': {item_id!r}. Expected an ID that begins with "
                                f"{prefix!r}.", f"input[{position}].id", "invalid_value")
    if kind in ("function_call", "function_call_output") and not item.get("call_id"):
        return OpenAIError(400, f"Missing required parameter: 'input[{position}].call_id'.",
                           f"input[{position}].call_id", "missing_required_parameter")
    return None


def _check_message(position: int, item: Mapping[str, Any]) -> OpenAIError | None:
    role = item.get("role")
    if role not in ROLES:
        return OpenAIError(400, f"Invalid value: {role!r}. Supported values are: {_listed(ROLES)}.",
                           f"input[{position}].role", "invalid_value")
    content = item.get("content")
    if isinstance(content, str):
        return None
    allowed = ASSISTANT_PARTS if role == "assistant" else USER_PARTS
    for index, part in enumerate(content if isinstance(content, list) else []):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            return OpenAIError(400, f"Invalid value: {kind!r}. Supported values are: {_listed(allowed)}.",
                               f"input[{position}].content[{index}]", "invalid_value")
    return None


def _check_reasoning(
    position: int, item: Mapping[str, Any], items: Sequence[Any], store: object, verifier: Verifier
) -> OpenAIError | None:
    item_id = str(item.get("id"))
    encrypted = item.get("encrypted_content")
    if encrypted is None and store is False:
        return OpenAIError(404, f"Item with id {item_id!r} not found. Items are not persisted when `store` is set "
                                "to false. Try again with `store` set to true, or remove this item from your input.",
                           "input")
    if encrypted is not None and not verifier.verify_reasoning(item_id, encrypted):
        return OpenAIError(400, f"The encrypted content for item {item_id} could not be verified.", "input",
                           "invalid_encrypted_content")
    if not isinstance(item.get("summary"), list):
        return OpenAIError(400, f"Missing required parameter: 'input[{position}].summary'.",
                           f"input[{position}].summary", "missing_required_parameter")
    following = items[position + 1] if position + 1 < len(items) else None
    if not isinstance(following, dict) or following.get("type", "message") == "reasoning" or (
        following.get("type", "message") == "message" and following.get("role") != "assistant"
    ):
        return OpenAIError(400, f"Item {item_id!r} of type 'reasoning' was provided without its required following "
                                "item.", "input")
    return None


def _listed(values: Sequence[str]) -> str:
    quoted = [f"'{value}'" for value in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}" if len(quoted) > 2 else " and ".join(quoted)


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """A token per four characters of what the model reads: instructions, input items and tools."""
    read = json.dumps(body.get("input", ""), ensure_ascii=False) + json.dumps(body.get("tools", []),
                                                                               ensure_ascii=False)
    return -(-len(read) // 4)
