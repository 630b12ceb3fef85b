"""pi-shaped messages and tools -> the ``input`` items and ``tools`` of an OpenAI Responses request (pure).

``to_input(system, messages, target)`` follows pi's conversion for its ``openai-responses`` api, so a
session either tool wrote continues in the other:

- the system prompt first, as ``target.system_role`` ("developer" for a reasoning model, as pi sends it);
- user text and images as ``input_text`` / ``input_image`` parts;
- an assistant reply of the target model itself (same provider, api and model) goes back item by item: a
  thinking block's ``thinkingSignature`` is the reasoning item as the API sent it (kept whole, encrypted
  content included) and is sent back unchanged; a text block becomes an assistant message whose id comes
  from its ``textSignature``; a tool call whose id is ``call_…|fc_…`` becomes a ``function_call`` with the
  two halves as ``call_id`` and ``id``. A reasoning item without encrypted content (the API could only look
  it up by id, and nothing is stored) or not followed by the reply's next item is left out: the API
  refuses both; so is one whose id is longer than the API takes (it cannot have issued it);
- an id of the target model's own longer than the API's ``MAX_ID`` (a message's, a call's ``call_id`` or
  item id) is replaced by a prefix and a hash of the whole id, the same on every request, so the request is
  accepted, its results still pair with their calls, and the prompt cache still matches;
- another model's reply goes without reasoning; its tool call ids are made acceptable as pi makes them:
  characters outside ``[A-Za-z0-9_-]`` become ``_``, at most 64, an item id from another provider or api
  is replaced by ``fc_`` and a hash, and one of another model of the same api is left out (the API pairs
  item ids with the reasoning that made them);
- tool results become ``function_call_output`` items for their call's ``call_id``; a call left without a
  result gets "No result provided", a result without its call is dropped; failed replies (``error`` /
  ``aborted``) are skipped;
- a compaction summary carrying a window ``/responses/compact`` returned for the target model and account
  (``server_compaction.carried_window``) goes as that window's items; anywhere else as its readable summary.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pi_compact.jstext import valid_text
from pi_compact.llm.convert import EMPTY_RESULT_TEXT, NO_RESULT_TEXT, Target
from pi_compact.llm.protocol import ToolSpec
from pi_compact.llm.server_compaction import carried_window
from pi_compact.messages import Message, to_llm_message

MAX_ID = 64  # the API's limit on item ids and call ids
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SKIPPED = frozenset({"error", "aborted"})


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as Responses ``function`` tools (not strict, as pi sends them)."""
    return [{"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters),
             "strict": False} for t in tools]


def compact_json(value: Any) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it (pi's spelling of arguments and signatures)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def to_input(system: str, messages: Iterable[Message], target: Target) -> list[dict[str, Any]]:
    """The ``input`` list of one request."""
    conversion = _Conversion(target)
    if system:
        conversion.items.append({"role": target.system_role, "content": valid_text(system)})
    for message in messages:
        conversion.feed(message)
    conversion.close_calls()
    return conversion.items


def call_id_of(tool_call_id: str) -> str:
    """The ``call_id`` half of a pi Responses tool call id (the whole id when it has no ``|``)."""
    return tool_call_id.split("|", 1)[0]


def _clean(part: str) -> str:
    # Never empty: the API refuses an empty call_id, and a foreign id can be all unsafe characters ("___");
    # the stand-in is the id's hash, so two such calls in one reply stay two.
    cleaned = _UNSAFE.sub("_", part)[:MAX_ID].rstrip("_")
    return cleaned or "call_" + hashlib.sha256(part.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _foreign_item_id(item_id: str) -> str:
    return _hashed("fc_", item_id)


def _hashed(prefix: str, long_id: str) -> str:
    """A stand-in for an id the API would refuse: ``prefix`` and a hash of the whole id (always the same)."""
    return prefix + hashlib.sha256(long_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _fitted(own_id: str, prefix: str) -> str:
    """One of the target model's own ids as the API takes it: unchanged, or hashed when too long."""
    return own_id if len(own_id) <= MAX_ID else _hashed(prefix, own_id)


class _Conversion:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.items: list[dict[str, Any]] = []
        self.renamed: dict[str, str] = {}  # a tool call's id in the session -> its call_id as sent
        self.pending: dict[str, str] = {}  # call_id -> tool name, still waiting for a result
        self.index = 0  # pi numbers assistant messages without an id by their place in the history

    def feed(self, message: Message) -> None:
        target = self.target
        window = carried_window(message, target.provider, target.api, target.model_id, target.account)
        if window is not None:
            self.close_calls()
            self.items.extend(window)
            self.index += 1  # it holds the summary's place in the history, as its text would
            return
        llm = to_llm_message(message)
        if llm is None:
            return
        role = llm.get("role")
        if role == "toolResult":
            original = str(llm.get("toolCallId", ""))
            call_id = self.renamed.get(original, call_id_of(original))
            if self.pending.pop(call_id, None) is not None:
                self.items.append({"type": "function_call_output", "call_id": call_id,
                                   "output": _result_output(llm.get("content"))})
            self.index += 1
            return
        if role == "assistant" and llm.get("stopReason") in _SKIPPED:
            return
        self.close_calls()
        if role == "user":
            converted = _user_item(llm)
            if converted is not None:
                self.items.append(converted)
        elif role == "assistant":
            self.items.extend(self._assistant_items(llm))
        self.index += 1

    def close_calls(self) -> None:
        for call_id in self.pending:
            self.items.append({"type": "function_call_output", "call_id": call_id, "output": NO_RESULT_TEXT})
        self.pending.clear()

    def _assistant_items(self, message: Message) -> list[dict[str, Any]]:
        own = self.target.made(message)
        same_api = message.get("provider") == self.target.provider and message.get("api") in (None, self.target.api)
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
        out: list[dict[str, Any]] = []
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "thinking" and own:
                item = _reasoning_item(block.get("thinkingSignature"))
                if item is not None:
                    out.append(item)
            elif kind == "text" and block.get("text"):
                out.append(self._text_item(str(block["text"]), block.get("textSignature") if own else None))
            elif kind == "toolCall":
                out.append(self._call_item(block, own, same_api))
        return [item for position, item in enumerate(out)
                if item.get("type") != "reasoning" or _followed(out, position)]

    def _text_item(self, text: str, signature: object) -> dict[str, Any]:
        item_id, phase = _text_signature(signature)
        if item_id is None:
            item_id = f"msg_{self.index}"
        elif len(item_id) > MAX_ID:
            item_id = _hashed("msg_", item_id)
        item: dict[str, Any] = {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": valid_text(text), "annotations": []}],
                                "status": "completed", "id": item_id}
        if phase is not None:
            item["phase"] = phase
        return item

    def _call_item(self, block: Mapping[str, Any], own: bool, same_api: bool) -> dict[str, Any]:
        original = str(block.get("id", ""))
        call_id, _, item_id = original.partition("|")
        if not own:
            call_id = _clean(call_id)
            if item_id and not same_api:
                item_id = _foreign_item_id(item_id)
            elif item_id:
                item_id = ""  # another model of this api: its item id was paired with that model's reasoning
        else:
            call_id, item_id = _fitted(call_id, "call_"), _fitted(item_id, "fc_") if item_id else ""
        self.renamed[original] = call_id
        self.pending[call_id] = str(block.get("name", ""))
        arguments = block.get("arguments")
        item: dict[str, Any] = {"type": "function_call"}
        if item_id:
            item["id"] = item_id if item_id.startswith("fc") else _clean(f"fc_{item_id}")
        item.update({"call_id": call_id, "name": str(block.get("name", "")),
                     "arguments": compact_json(arguments if arguments is not None else {})})
        return item


def _followed(items: Sequence[Mapping[str, Any]], position: int) -> bool:
    """Is the reasoning item at ``position`` followed by an item it belongs to (a message or a call)?"""
    return position + 1 < len(items) and items[position + 1].get("type") != "reasoning"


def _reasoning_item(signature: object) -> dict[str, Any] | None:
    """The reasoning item a thinking block keeps, when it can be sent back with ``store: false``."""
    if not isinstance(signature, str) or not signature.startswith("{"):
        return None
    try:
        item = json.loads(signature)
    except ValueError:
        return None
    if not isinstance(item, dict) or item.get("type") != "reasoning" or not item.get("encrypted_content"):
        return None
    if len(str(item.get("id", ""))) > MAX_ID:  # its encrypted content belongs to that id: it cannot be renamed
        return None
    return item


def _text_signature(signature: object) -> tuple[str | None, str | None]:
    """(message id, phase) from pi's ``textSignature`` (``{"v":1,"id":…}``, or an older bare id)."""
    if not isinstance(signature, str) or not signature:
        return None, None
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    mime = block.get("mimeType") or "image/png"
    return {"type": "input_image", "detail": "auto", "image_url": f"data:{mime};base64,{block.get('data', '')}"}


def _user_item(message: Message) -> dict[str, Any] | None:
    content = message.get("content")
    if isinstance(content, str):
        return {"role": "user", "content": [{"type": "input_text", "text": valid_text(content)}]} if content else None
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and block.get("text"):
            parts.append({"type": "input_text", "text": valid_text(str(block["text"]))})
        elif block.get("type") == "image":
            parts.append(_image(block))
    return {"role": "user", "content": parts} if parts else None


def _result_output(content: Any) -> str | list[dict[str, Any]]:
    """A tool result's ``output``: its text, or its text and images as parts."""
    if isinstance(content, str):
        return valid_text(content) or EMPTY_RESULT_TEXT
    blocks = [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []
    text = "\n".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")
    images = [_image(block) for block in blocks if block.get("type") == "image"]
    if not images:
        return valid_text(text) or EMPTY_RESULT_TEXT
    head = [{"type": "input_text", "text": valid_text(text)}] if text else []
    return [*head, *images]
