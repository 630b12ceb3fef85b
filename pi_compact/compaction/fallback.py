"""A structured summary built without a model, so a failing provider never strands a session (pure).

Used when the summarizer still fails after retries (provider down, key revoked, the summarizer's own
window overflowing). It is plainer than a model's summary but keeps what the next model most needs:
the goal, the user's constraints, what was done (from tool calls and their results), the files, and
the last request. The same headings as a model summary, read from ``prompts.HISTORY_HEADINGS`` (a
heading added there is written here too, as not extracted).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.compaction.fileops import strip_file_lists
from pi_compact.compaction.prompts import (
    BLOCKED,
    CONSTRAINTS,
    CRITICAL,
    DECISIONS,
    DONE,
    GOAL,
    HISTORY_HEADINGS,
    IN_PROGRESS,
    NEXT_STEPS,
    PROGRESS,
)
from pi_compact.jstext import js_len, js_slice
from pi_compact.messages import Message, text_of

_MAX_ITEM = 300
_MAX_ITEMS = 40
# Sentences in which users usually state rules: "must", "don't", "never", "always", "prefer"...
_CONSTRAINT = re.compile(
    r"\b(must|mustn't|must not|don't|do not|never|always|prefer|should|shouldn't|avoid|only|without|keep)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_NOT_EXTRACTED = "- (not extracted: no model was available to write this section)"


def _clip(text: str, limit: int = _MAX_ITEM) -> str:
    flat = " ".join(text.split())
    return flat if js_len(flat) <= limit else js_slice(flat, limit - 1) + "…"


def _user_texts(messages: Sequence[Message]) -> list[str]:
    texts = []
    for message in messages:
        if message.get("role") == "user":
            text = text_of(message.get("content")).strip()
            if text:
                texts.append(text)
    return texts


def _describe_call(block: Mapping[str, Any]) -> str:
    arguments = block.get("arguments") if isinstance(block.get("arguments"), Mapping) else {}
    assert isinstance(arguments, Mapping)
    key = next(
        (arguments[k] for k in ("path", "command", "pattern", "query") if isinstance(arguments.get(k), str)), ""
    )
    return _clip(f"{block.get('name', 'tool')} {key}".strip(), 160)


def _tool_progress(messages: Sequence[Message]) -> tuple[list[str], list[str], list[str]]:
    """(done, in progress, blocked) lines from tool calls and their results."""
    calls: dict[str, str] = {}
    order: list[str] = []
    outcome: dict[str, bool] = {}
    errors: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            for block in message.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    call_id = str(block.get("id", len(order)))
                    calls[call_id] = _describe_call(block)
                    order.append(call_id)
        elif role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            failed = bool(message.get("isError"))
            outcome[call_id] = not failed
            if failed:
                errors[call_id] = _clip(text_of(message.get("content")), 200)
    done = [calls[c] for c in order if outcome.get(c) is True]
    pending = [calls[c] for c in order if c not in outcome]
    # A failure that a later identical call fixed is not a blocker any more.
    succeeded = set(done)
    blocked = [f"{calls[c]}: {errors[c]}" for c in order if outcome.get(c) is False and calls[c] not in succeeded]
    return done, pending, blocked


def _bullets(items: Sequence[str], prefix: str = "- ", empty: str = "- (none)") -> str:
    unique = list(dict.fromkeys(items))
    if len(unique) > _MAX_ITEMS:
        skipped = len(unique) - _MAX_ITEMS
        unique = unique[-_MAX_ITEMS:]
        return "\n".join([f"- ({skipped} earlier items omitted)", *(prefix + i for i in unique)])
    return "\n".join(prefix + item for item in unique) if unique else empty


def derived_sections(messages: Sequence[Message]) -> dict[str, str]:
    """The bodies of the sections a history always has (Goal, Progress, Next Steps), built without a
    model: the first user message, the tool calls and their results, the last user message. Also what
    the quality gate puts in a section the model left as placeholders (``quality.fill_sections``)."""
    users = _user_texts(messages)
    done, pending, blocked = _tool_progress(messages)
    return {
        GOAL: _clip(users[0], 600) if users else "(not stated in the summarized messages)",
        PROGRESS: f"{DONE}\n" + _bullets(done, "- [x] ", "- (no completed tool work recorded)")
        + f"\n\n{IN_PROGRESS}\n" + _bullets(pending, "- [ ] ", "- (none)")
        + f"\n\n{BLOCKED}\n" + _bullets(blocked),
        NEXT_STEPS: "1. " + (_clip(users[-1], 600) if users else "Continue from the most recent messages."),
    }


def fallback_summary(
    messages: Sequence[Message],
    *,
    previous_summary: str | None,
    read_files: Sequence[str],
    modified_files: Sequence[str],
    error: str,
) -> str:
    """A deterministic summary of ``messages`` under every heading, then the previous summary without its file
    lists."""
    users = _user_texts(messages)
    constraints = [
        _clip(sentence.strip())
        for text in users
        for sentence in _SENTENCE.split(text)
        if sentence.strip() and _CONSTRAINT.search(sentence)
    ]
    derived = derived_sections(messages)
    context = [f"Read: {path}" for path in read_files] + [f"Modified: {path}" for path in modified_files]
    context.append(f"This summary was built without a model because summarization failed: {_clip(error, 200)}")
    bodies = {
        **derived, CONSTRAINTS: _bullets(constraints),
        DECISIONS: "- (not extracted: no model was available to judge decisions)", CRITICAL: _bullets(context),
    }
    summary = "\n\n".join(f"{heading}\n{bodies.get(heading, _NOT_EXTRACTED)}" for heading in HISTORY_HEADINGS)
    # Its file lists are left out: the caller appends the current ones, which include them.
    previous = strip_file_lists(previous_summary or "")
    if previous:
        summary += "\n\n---\n\n**Earlier summary (kept as written):**\n\n" + previous
    return summary
