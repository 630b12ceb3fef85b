"""A structured summary built without a model, so a failing provider never strands a session (pure).

Used when the summarizer still fails after retries (provider down, key revoked, the summarizer's own
window overflowing). It is plainer than a model's summary but keeps what the next model most needs:
the goal, the user's constraints, what was done (from tool calls and their results) and the last
request. The same headings as a model summary, read from ``prompts.HISTORY_HEADINGS`` (a heading added
there is written here too, as not extracted). The blocks every summary ends with (``compaction.kept``:
the user's messages, the tools' outcomes with their errors, the file lists) are added by the caller, so
no error text, path or attached file is written into a section here: only what the user typed
(``kept.user_messages.typed_text``) and the calls by their tool and first argument, each on one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.compaction.fileops import strip_file_lists
from pi_compact.compaction.kept.user_messages import typed_text
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
from pi_compact.llm.redact import redact_token_shapes
from pi_compact.messages import Message

_MAX_ITEM = 300
_MAX_ITEMS = 40
_GOAL_CHARS = 300
# What the user asked for is not picked out of their sentences (by words such as "must" or "never"): their
# messages are kept whole after the sections, and these lines say where.
_RULES_KEPT = "- (the user's own words, rules included, are kept in <user-messages> below)"
_NEWEST_REQUEST = "Carry on with the user's newest request (the first of <user-messages> below)."
_NOT_EXTRACTED = "- (not extracted: no model was available to write this section)"


def _clip(text: str, limit: int = _MAX_ITEM) -> str:
    flat = redact_token_shapes(" ".join(text.split()))
    return flat if js_len(flat) <= limit else js_slice(flat, limit - 1) + "…"


def _user_texts(messages: Sequence[Message]) -> list[str]:
    return [text for text in map(typed_text, messages) if text]


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
            outcome[call_id] = not message.get("isError")
    done = [calls[c] for c in order if outcome.get(c) is True]
    pending = [calls[c] for c in order if c not in outcome]
    # A failure that a later identical call fixed is not a blocker any more.
    succeeded = set(done)
    # The error itself is quoted in ``<tool-outcomes>``, as data: a section names only the call.
    blocked = [f"{calls[c]}: failed" for c in order if outcome.get(c) is False and calls[c] not in succeeded]
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
    # The user's messages themselves are in <user-messages> (newest first): the newest is pointed to, not
    # copied; the first, which most often states the goal, is clipped here as it may be out of that budget.
    return {
        GOAL: _clip(users[0], _GOAL_CHARS) if users else "(not stated in the summarized messages)",
        PROGRESS: f"{DONE}\n" + _bullets(done, "- [x] ", "- (no completed tool work recorded)")
        + f"\n\n{IN_PROGRESS}\n" + _bullets(pending, "- [ ] ", "- (none)")
        + f"\n\n{BLOCKED}\n" + _bullets(blocked),
        NEXT_STEPS: "1. " + (_NEWEST_REQUEST if users else "Continue from the most recent messages."),
    }


def fallback_summary(
    messages: Sequence[Message],
    *,
    previous_summary: str | None,
    error: str,
) -> str:
    """A deterministic summary of ``messages`` under every heading, then the previous summary without its file
    lists (the caller adds the current blocks)."""
    derived = derived_sections(messages)
    context = [f"This summary was built without a model because summarization failed: {_clip(error, 200)}"]
    bodies = {
        **derived, CONSTRAINTS: _RULES_KEPT if _user_texts(messages) else "- (none)",
        DECISIONS: "- (not extracted: no model was available to judge decisions)", CRITICAL: _bullets(context),
    }
    summary = "\n\n".join(f"{heading}\n{bodies.get(heading, _NOT_EXTRACTED)}" for heading in HISTORY_HEADINGS)
    # Its file lists are left out: the caller appends the current ones, which include them (and ``summarize``
    # hands it over without our other blocks, whose items it carries on itself).
    previous = strip_file_lists(previous_summary or "")
    if previous:
        summary += "\n\n---\n\n**Earlier summary (kept as written):**\n\n" + previous
    return summary
