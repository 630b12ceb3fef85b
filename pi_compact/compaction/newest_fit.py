"""The newest tool result, cut to what fits the request (pure).

Compaction never summarizes the turn's newest tool result (``cut.keep_newest_result``): it is what the
user asked about. When it is too big for the window even then (a 40k-character NOTES.md read on a
16k-token local model), the request carries the lines that hold the turn's question's specific terms
(``compaction.focus``: "meeting 137" finds "## Meeting 137", not line 137) with a few lines around them,
its first lines in the room left, markers where lines are left out, and a note saying what is left out
and how to get it (``read`` with an offset, or ``recall``). Only the request: the session file keeps the
whole result, and the next reply's usage measures what was really sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from pi_compact.compaction.focus import LOOK_BACK, Focus, follows_up, found_spans
from pi_compact.compaction.kept.blocks import block_lines
from pi_compact.compaction.tokens import Estimator
from pi_compact.messages import Message

MIN_SHOWN_TOKENS = 256  # less than this of a result tells the model nothing; then it is sent whole and may overflow
NOTE_ROOM = 96  # tokens left for the note, and for lines that cost more than the average line
MATCH_SHARE = 0.6  # of a cut result, at most this much goes to the lines the question names; the rest to the first
GAP_ROOM = 48  # characters of the marker that says which lines are not shown
# A result cut to fit takes at most this share of the window, not all the room the threshold leaves: cut to the
# threshold, every request after it sits at the threshold (the next call compacts again), costs the most the
# provider charges, and on the embedded model takes minutes to read (13,000 tokens at ~40 a second on a
# 2-core laptop, issue 44's fourth walk). The lines the question names come first in it; the rest is a read away.
NEWEST_SHARE = 0.2
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


def cut_note(shown: int, total: int, tool: str, args: Mapping[str, Any], next_line: int | None,
             spans: Sequence[tuple[int, int]] = ()) -> str:
    """What the model reads after the lines it got: how much is left out, and how to see it. ``spans``: the
    line numbers (first, last) of the runs shown after the first lines, which hold the question's terms with
    the lines around them, the best first. A ``read`` is pointed at the best of them, not past the first
    lines, and the note ends by asking for an answer from them: a small model goes where the note points
    (issue 44's walks read ``offset=692`` and ``offset=225``, 800 lines, and recalled the codename it had
    just been shown)."""
    path = args.get("path") if tool == "read" and isinstance(args.get("path"), str) else None
    if not spans:
        where = " Use"
        if path is not None and next_line is not None:
            where = f" Read {path} with offset={next_line} for the lines after the first ones, or use"
        return (f"\n\n[Cut to fit the context window: the first {shown:,} of {total:,} lines of this output are "
                f"shown; the whole output is kept in the session.{where} recall with words from the part you need.]")
    runs = ", ".join(f"{first:,}–{last:,}" if last > first else f"{first:,}" for first, last in sorted(spans))
    first, last = spans[0]
    alone = f" (to see them alone: read {path} with offset={first} and limit={last - first + 1})" if path else ""
    # Said last: a small model does what the note's last sentence offers (a read at the offset, recall of the
    # very value it had just been shown), so the last sentence is to answer.
    return (f"\n\n[Cut to fit the context window: the first {shown:,} of {total:,} lines are shown, and lines {runs}"
            f", which hold words of the question, with the lines around them{alone}. The whole output is kept in "
            f"the session; recall finds other parts of it. If lines {runs} hold what the question asks, answer "
            "from them now.]")


def _typed(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text")) for b in content or () if isinstance(b, Mapping) and b.get("type") == "text")


def _asked_before(messages: Sequence[Message]) -> Iterator[str]:
    """The user's earlier messages, newest first: those in ``messages``, then those the newest summary
    among them kept word for word (its ``<user-messages>`` block, newest first)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            yield _typed(message)
        elif message.get("role") == "compactionSummary":
            for line in block_lines(str(message.get("summary") or ""), "user-messages") or ():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, str):
                    yield item
            return


def question_of(messages: Sequence[Message], index: int) -> str:
    """What the turn asks: the newest user message before ``index``; for a follow-up that names little
    ("Are you sure? Quote the line of NOTES.md that says it."), with the question it follows up (among the
    ``LOOK_BACK`` messages before it, a summary's kept ones included), as recall reads it. Issue 44's fourth
    walk: the follow-up's re-read went out cut to its first lines, the answer's line left out."""
    asked = _asked_before(messages[:index])
    newest = next(asked, "")
    if not follows_up(newest):
        return newest
    for earlier in islice(asked, LOOK_BACK):
        focus = Focus.of(earlier)
        if focus is not None and (focus.phrases or len(focus.stems) >= 2):
            return f"{earlier}\n{newest}"
    return newest


def fit_newest_result(messages: Sequence[Message], over: int, estimator: Estimator,
                      most: int | None = None) -> list[Message]:
    """``messages`` with the turn's newest tool result cut by about ``over`` tokens, and to at most ``most``
    tokens when given (``NEWEST_SHARE`` of the window; the lines the question names, its first lines, then
    ``cut_note``); ``messages`` as they are when ``over`` <= 0 and no ``most`` is given, when there is no such
    result, or when it is not much bigger than ``MIN_SHOWN_TOKENS`` (or ``most``). A result that would have
    to shrink below that keeps ``MIN_SHOWN_TOKENS``: the request may still pass the threshold (the answer's
    room shrinks), but sent whole it would surely pass the window."""
    index = newest_result_index(messages) if over > 0 or most is not None else None
    if index is None:
        return list(messages)
    return fit_result(messages, index, over, estimator, most)


def fit_result(messages: Sequence[Message], index: int, over: int, estimator: Estimator,
               most: int | None) -> list[Message]:
    """``fit_newest_result`` for the tool result at ``index``."""
    result = messages[index]
    content = result.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    texts = [b for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    if len(texts) != 1 or len(blocks) != 1:
        return list(messages)  # images or several blocks: no line to cut at
    text = str(texts[0]["text"])
    tokens = estimator(result)
    goal = max(min(tokens - max(over, 0), most if most is not None else tokens), MIN_SHOWN_TOKENS + NOTE_ROOM)
    target = goal - NOTE_ROOM
    if goal >= tokens or not text:
        return list(messages)
    lines = text.split("\n")
    found = found_spans(question_of(messages, index), text)
    keep_chars = int(len(text) * target / tokens)
    fitted: Message | None = None
    for _ in range(4):  # lines are not all alike: measure the cut, and cut again while it is over
        fitted, kept = _cut(messages[:index], result, texts[0], lines, keep_chars, found)
        if fitted is None:
            return list(messages)
        size = estimator(fitted)
        if size <= goal:
            break
        keep_chars = int(kept * target / size)
    assert fitted is not None
    return [*messages[:index], fitted, *messages[index + 1 :]]


def _chosen(lines: Sequence[str], found: Sequence[tuple[int, int, float]], room: int) -> list[tuple[int, int]]:
    """The spans of ``found`` (best first) that fit in ``room`` characters together, in line order."""
    chosen: list[tuple[int, int]] = []
    for first, last, _ in found:
        size = sum(len(line) + 1 for line in lines[first : last + 1]) + GAP_ROOM
        if size <= room:
            chosen.append((first, last))
            room -= size
    return sorted(chosen)


def _number(lines: Sequence[str], index: int) -> int:
    """The line number the model sees for ``lines[index]``: the file's in a numbered ``read``, else 1-based."""
    numbered = _READ_LINE.match(lines[index])
    return int(numbered.group(1)) if numbered else index + 1


def _gap(lines: Sequence[str], first: int, stop: int) -> str:
    """The marker for ``lines[first:stop]`` left out: by the file's line numbers when the output numbers its
    lines (a ``read`` from an offset starts past 1), else by the output's own."""
    numbers = [_READ_LINE.match(lines[i]) for i in (first, stop - 1)]
    if numbers[0] and numbers[1]:
        return f"[… lines {int(numbers[0].group(1)):,}–{int(numbers[1].group(1)):,} not shown …]"
    return f"[… lines {first + 1:,}–{stop:,} of this output not shown …]"


def _cut(before: Sequence[Message], result: Message, block: Mapping[str, Any], lines: Sequence[str],
         keep_chars: int, found: Sequence[tuple[int, int, float]] = ()) -> tuple[Message | None, int]:
    """``result`` with the lines of ``found`` that fit in ``MATCH_SHARE`` of ``keep_chars``, its first lines
    in the rest, gap markers and the note, and the characters kept; None when no line or every line would
    be kept."""
    chosen = _chosen(lines, found, int(keep_chars * MATCH_SHARE))
    spanned = {i for first, last in chosen for i in range(first, last + 1)}
    size = sum(len(lines[i]) + 1 for i in spanned) + GAP_ROOM * len(chosen)
    head = 0  # the first lines, as many as the room left holds (the spans' own lines are paid for)
    while head < len(lines) and (head in spanned or size + len(lines[head]) + 1 <= keep_chars):
        size += 0 if head in spanned else len(lines[head]) + 1
        head += 1
    shown_at = sorted(spanned.union(range(head)))
    if not shown_at or len(shown_at) == len(lines):
        return None, size
    shown: list[str] = []
    end = 0
    for i in shown_at:
        if i > end:
            shown.append(_gap(lines, end, i))
        shown.append(lines[i])
        end = i + 1
    numbered = _READ_LINE.match(lines[head - 1]) if head else None
    # The best-scored span first (the one a read is pointed at); ``found`` is best first.
    order = [(first, last) for first, last, _ in found]
    spans = [(_number(lines, first), _number(lines, last))
             for first, last in sorted(chosen, key=order.index) if last >= head]
    note = cut_note(head, len(lines), str(result.get("toolName") or ""),
                    _call_args(before, result.get("toolCallId")), int(numbered.group(1)) + 1 if numbered else None,
                    spans)
    return {**result, "content": [{**block, "text": "\n".join(shown) + note}]}, size


__all__ = ["MIN_SHOWN_TOKENS", "NEWEST_SHARE", "cut_note", "fit_newest_result", "fit_result",
           "newest_result_index", "question_of"]
