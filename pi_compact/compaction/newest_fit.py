"""The newest tool result, cut to what fits the request (pure).

Compaction never summarizes the turn's newest tool result (``cut.keep_newest_result``): it is what the
user asked about. When it is too big for the window even then (a 40k-character NOTES.md read on a
16k-token local model), the request carries its first lines, as many as fit, and a note saying what is
left out and how to get it (``read`` with an offset, or ``recall``). Only the request: the session file
keeps the whole result, and the next reply's usage measures what was really sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.compaction.tokens import Estimator
from pi_compact.messages import Message

MIN_SHOWN_TOKENS = 256  # less than this of a result tells the model nothing; then it is sent whole and may overflow
NOTE_ROOM = 96  # tokens left for the note, and for lines that cost more than the average line
_READ_LINE = re.compile(r"^\s*(\d+)\t")


def newest_result_index(messages: Sequence[Message]) -> int | None:
    """The newest tool result after the newest user message (the turn in progress), or None."""
    for index in range(len(messages) - 1, -1, -1):
        role = messages[index].get("role")
        if role == "toolResult":
            return index
        if role in ("user", "bashExecution"):
            return None
    return None


def _call_args(messages: Sequence[Message], call_id: Any) -> Mapping[str, Any]:
    for message in reversed(messages):
        for block in message.get("content") or () if message.get("role") == "assistant" else ():
            if isinstance(block, Mapping) and block.get("type") == "toolCall" and block.get("id") == call_id:
                args = block.get("arguments")
                return args if isinstance(args, Mapping) else {}
    return {}


def cut_note(shown: int, total: int, tool: str, args: Mapping[str, Any], next_line: int | None) -> str:
    """What the model reads after the lines it got: how much is left out, and how to see it."""
    where = ""
    if tool == "read" and isinstance(args.get("path"), str) and next_line is not None:
        where = f" Read {args['path']} with offset={next_line} for the lines after these, or"
    else:
        where = " Ask"
    return (f"\n\n[Cut to fit the context window: the first {shown:,} of {total:,} lines of this output are shown; "
            f"the whole output is kept in the session.{where} use recall with words from the part you need.]")


def fit_newest_result(messages: Sequence[Message], over: int, estimator: Estimator) -> list[Message]:
    """``messages`` with the turn's newest tool result cut by about ``over`` tokens (its first lines
    kept, then ``cut_note``); ``messages`` as they are when ``over`` <= 0, when there is no such result,
    or when it is not much bigger than ``MIN_SHOWN_TOKENS``. A result that would have to shrink below that
    keeps ``MIN_SHOWN_TOKENS``: the request may still pass the threshold (the answer's room shrinks), but
    sent whole it would surely pass the window."""
    index = newest_result_index(messages) if over > 0 else None
    if index is None:
        return list(messages)
    result = messages[index]
    content = result.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    texts = [b for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    if len(texts) != 1 or len(blocks) != 1:
        return list(messages)  # images or several blocks: no line to cut at
    text = str(texts[0]["text"])
    tokens = estimator(result)
    goal = max(tokens - over, MIN_SHOWN_TOKENS + NOTE_ROOM)  # the size of the cut result with its note
    target = goal - NOTE_ROOM
    if goal >= tokens or not text:
        return list(messages)
    lines = text.split("\n")
    keep_chars = int(len(text) * target / tokens)
    fitted: Message | None = None
    for _ in range(4):  # lines are not all alike: measure the cut, and cut again while it is over
        fitted, kept = _cut(messages[:index], result, texts[0], lines, keep_chars)
        if fitted is None:
            return list(messages)
        size = estimator(fitted)
        if size <= goal:
            break
        keep_chars = int(kept * target / size)
    assert fitted is not None
    return [*messages[:index], fitted, *messages[index + 1 :]]


def _cut(before: Sequence[Message], result: Message, block: Mapping[str, Any], lines: Sequence[str],
         keep_chars: int) -> tuple[Message | None, int]:
    """``result`` with its first lines up to ``keep_chars`` and the note, and the characters kept; None
    when no line or every line would be kept."""
    shown: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > keep_chars:
            break
        shown.append(line)
        size += len(line) + 1
    if not shown or len(shown) == len(lines):
        return None, size
    numbered = _READ_LINE.match(shown[-1])
    note = cut_note(len(shown), len(lines), str(result.get("toolName") or ""),
                    _call_args(before, result.get("toolCallId")), int(numbered.group(1)) + 1 if numbered else None)
    return {**result, "content": [{**block, "text": "\n".join(shown) + note}]}, size


__all__ = ["MIN_SHOWN_TOKENS", "cut_note", "fit_newest_result", "newest_result_index"]
