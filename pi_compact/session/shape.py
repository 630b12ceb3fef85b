"""Whether a parsed session line is an entry the rest of the code can use (pure).

Valid JSON can still hold an entry of the wrong shape: a ``message`` that is a string, a
``tokensBefore`` of "abc", ``content`` that is a number, a ``role`` that is a list, objects nested a
thousand levels deep. pi copes with such lines; code here would fail on them far from the file, with a
traceback. So loading checks each entry once, for the types of the fields our code reads, and skips an
entry that fails, reported like a malformed line. Only types are checked, and only of fields we read:
a missing optional field, an unknown field or an unknown entry type passes, so files written by newer
pi versions still load.

``entry_problem`` returns the reason as the end of a sentence ("its message is not an object").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting of objects and arrays accepted in one entry. Real entries stay far below it; deeper
ones would exhaust Python's recursion limit in code that copies or serializes them."""

_ABSENT: Any = object()


def _text(value: Any) -> bool:
    return value is _ABSENT or value is None or type(value) is str


def _number(value: Any) -> bool:
    """Absent, null or a finite number (JSON's NaN and Infinity break sums and ``int()``)."""
    if value is _ABSENT or value is None or type(value) is int:
        return True
    return type(value) is float and math.isfinite(value)


def _block_problem(block: Any) -> str | None:
    if type(block) is not dict:
        return "a content block that is not an object"
    kind = block.get("type")
    if type(kind) is not str:
        return "a content block without a string type"
    if kind == "text" and type(block.get("text", "")) is not str:
        return "a text block whose text is not a string"
    if kind == "thinking" and not _text(block.get("thinking", _ABSENT)):
        return "a thinking block whose thinking is not a string"
    if kind == "toolCall":
        if not _text(block.get("name", _ABSENT)) or not _text(block.get("id", _ABSENT)):
            return "a tool call whose name or id is not a string"
        arguments = block.get("arguments", _ABSENT)
        if arguments is not _ABSENT and arguments is not None and type(arguments) is not dict:
            return "a tool call whose arguments are not an object"
    if kind == "image" and not (_text(block.get("data", _ABSENT)) and _text(block.get("mimeType", _ABSENT))):
        return "an image block whose data is not a string"
    return None


def _content_problem(content: Any) -> str | None:
    if content is _ABSENT or content is None or type(content) is str:
        return None
    if type(content) is not list:
        return "content that is neither text nor a list of blocks"
    for block in content:
        problem = _block_problem(block)
        if problem is not None:
            return problem
    return None


_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def message_problem(message: Any) -> str | None:
    """Why a message (in pi's JSON shape) cannot be used, or None."""
    if type(message) is not dict:
        return "a message that is not an object"
    role = message.get("role")
    if type(role) is not str:
        return "a message without a string role"
    problem = _content_problem(message.get("content", _ABSENT))
    if problem is not None:
        return f"a {role} message with {problem}"
    if not all(_text(message.get(key, _ABSENT)) for key in ("stopReason", "provider", "model", "toolCallId",
                                                             "toolName", "command", "output", "summary")):
        return f"a {role} message with a text field that is not a string"
    usage = message.get("usage", _ABSENT)
    if usage is not _ABSENT and usage is not None:
        if type(usage) is not dict or not all(_number(usage.get(key, _ABSENT)) for key in _USAGE_KEYS):
            return f"a {role} message whose usage does not hold numbers"
    if not _number(message.get("exitCode", _ABSENT)):
        return f"a {role} message whose exit code is not a number"
    return None


def _compaction_problem(entry: dict[str, Any]) -> str | None:
    if not _number(entry.get("tokensBefore", _ABSENT)):
        return "its tokensBefore is not a number"
    if not (_text(entry.get("summary", _ABSENT)) and _text(entry.get("firstKeptEntryId", _ABSENT))):
        return "its summary or firstKeptEntryId is not a string"
    details = entry.get("details", _ABSENT)
    if details is not _ABSENT and details is not None:
        if type(details) is not dict:
            return "its details are not an object"
        for key in ("readFiles", "modifiedFiles"):
            files = details.get(key, _ABSENT)
            if files is not _ABSENT and files is not None and (
                type(files) is not list or not all(type(f) is str for f in files)
            ):
                return f"its {key} is not a list of paths"
    tail = entry.get("retainedTail", _ABSENT)
    if tail is not _ABSENT and tail is not None:
        if type(tail) is not list:
            return "its retainedTail is not a list of messages"
        for message in tail:
            problem = message_problem(message)
            if problem is not None:
                return f"its retainedTail holds {problem}"
    return None


def _message_entry_problem(entry: dict[str, Any]) -> str | None:
    problem = message_problem(entry.get("message"))
    return None if problem is None else f"it holds {problem}"


def _custom_message_problem(entry: dict[str, Any]) -> str | None:
    problem = _content_problem(entry.get("content", _ABSENT))
    if problem is None and not _text(entry.get("customType", _ABSENT)):
        problem = "a customType that is not a string"
    return None if problem is None else f"it has {problem}"


def _text_fields(*keys: str) -> Callable[[dict[str, Any]], str | None]:
    def check(entry: dict[str, Any]) -> str | None:
        for key in keys:
            if not _text(entry.get(key, _ABSENT)):
                return f"its {key} is not a string"
        return None

    return check


_BY_TYPE: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "message": _message_entry_problem,
    "compaction": _compaction_problem,
    "custom_message": _custom_message_problem,
    "branch_summary": _text_fields("summary", "fromId"),
    "thinking_level_change": _text_fields("thinkingLevel"),
    "model_change": _text_fields("provider", "modelId"),
    "label": _text_fields("targetId", "label"),
}


def entry_problem(entry: dict[str, Any]) -> str | None:
    """Why a parsed line cannot be used as a session entry (or header), or None when it can."""
    kind = entry.get("type")
    if type(kind) is not str:
        return "it has no string type"
    if not _text(entry.get("id", _ABSENT)) or not _text(entry.get("parentId", _ABSENT)):
        return "its id or parentId is not a string"
    check = _BY_TYPE.get(kind)
    return None if check is None else check(entry)


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether objects and arrays nest more than ``limit`` levels deep in ``value`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if type(node) is dict:
            stack.extend((child, depth + 1) for child in node.values() if type(child) in (dict, list))
        elif type(node) is list:
            stack.extend((child, depth + 1) for child in node if type(child) in (dict, list))
    return False
