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
"""Deepest nesting of objects and arrays accepted in a tool call's arguments, the one free-form value
that is estimated, serialized and copied (recursively) on its way to the model. Real arguments stay
far below it. (A line nested too deeply for the JSON parser itself is skipped when parsed.)"""

_ABSENT: Any = object()


def _text(value: Any) -> bool:
    return value is None or value is _ABSENT or type(value) is str


def _number(value: Any) -> bool:
    """Absent, null or a finite number (JSON's NaN and Infinity break sums and ``int()``)."""
    if value is _ABSENT or value is None or type(value) is int:
        return True
    return type(value) is float and math.isfinite(value)


_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def _block_problem(block: Any) -> str | None:
    if type(block) is not dict:
        return "a content block that is not an object"
    kind = block.get("type")
    if kind == "text":
        return None if type(block.get("text", "")) is str else "a text block whose text is not a string"
    if type(kind) is not str:
        return "a content block without a string type"
    if kind == "toolCall":
        name, call_id, arguments = block.get("name"), block.get("id"), block.get("arguments")
        if (name is not None and type(name) is not str) or (call_id is not None and type(call_id) is not str):
            return "a tool call whose name or id is not a string"
        if arguments is not None and (type(arguments) is not dict or depth_exceeds(arguments)):
            return "a tool call whose arguments are not an object, or nested too deeply"
    elif kind == "thinking":
        if not _text(block.get("thinking")):
            return "a thinking block whose thinking is not a string"
    elif kind == "image" and not (_text(block.get("data")) and _text(block.get("mimeType"))):
        return "an image block whose data is not a string"
    return None


def _content_problem(content: Any) -> str | None:
    if content is None or type(content) is str:
        return None
    if type(content) is not list:
        return "content that is neither text nor a list of blocks"
    for block in content:
        # Plain text blocks are most blocks: checked here without a call.
        if type(block) is dict and block.get("type") == "text" and type(block.get("text", "")) is str:
            continue
        problem = _block_problem(block)
        if problem is not None:
            return problem
    return None


_TEXT_KEYS = {  # per role, the text fields code reads
    "assistant": ("stopReason", "provider", "model"),
    "toolResult": ("toolCallId", "toolName"),
    "bashExecution": ("command", "output"),
    "branchSummary": ("summary",),
    "compactionSummary": ("summary",),
}
_TEXT = frozenset({str, type(None)})
_COUNT = frozenset({int, type(None)})


def message_problem(message: Any) -> str | None:
    """Why a message (in pi's JSON shape) cannot be used, or None.

    Written for speed (it runs on every message of every session loaded): the usual case, text
    blocks and integer counts, takes no function call.
    """
    if type(message) is not dict:
        return "a message that is not an object"
    get = message.get
    role = get("role")
    if type(role) is not str:
        return "a message without a string role"
    content = get("content")
    if type(content) is list:
        for block in content:
            if type(block) is dict and block.get("type") == "text" and type(block.get("text", "")) is str:
                continue
            problem = _block_problem(block)
            if problem is not None:
                return f"a {role} message with {problem}"
    elif type(content) not in _TEXT:
        return f"a {role} message with content that is neither text nor a list of blocks"
    for key in _TEXT_KEYS.get(role, ()):
        if type(get(key)) not in _TEXT:
            return f"a {role} message whose {key} is not a string"
    if role == "assistant":
        usage = get("usage")
        if usage is not None:
            if type(usage) is not dict:
                return "an assistant message whose usage is not an object"
            for value in map(usage.get, _USAGE_KEYS):
                if type(value) not in _COUNT and not _number(value):
                    return "an assistant message whose usage does not hold numbers"
    elif role == "bashExecution" and not _number(get("exitCode")):
        return "a bashExecution message whose exit code is not a number"
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
    entry_id, parent = entry.get("id"), entry.get("parentId")
    if (entry_id is not None and type(entry_id) is not str) or (parent is not None and type(parent) is not str):
        return "its id or parentId is not a string"
    if kind == "message":
        problem = message_problem(entry.get("message"))
        return None if problem is None else f"it holds {problem}"
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
