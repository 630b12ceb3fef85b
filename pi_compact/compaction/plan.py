"""Planning a compaction: what to summarize, what to keep, and what the summary must carry (pure).

``prepare_compaction`` follows pi 0.73.1: the span starts at the previous compaction's
``firstKeptEntryId`` (so messages that compaction kept are summarized now rather than lost, pi
#2608), ``tokensBefore`` comes from the rebuilt context, and the previous summary is carried for an
update-style summary. The plan is data; spending tokens on it is ``summarize``'s job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_compact.compaction.cut import find_cut_point, keep_newest_result
from pi_compact.compaction.fileops import FileOps, file_lists
from pi_compact.compaction.tokens import Estimator, estimate_context_tokens, estimator_for
from pi_compact.messages import Message
from pi_compact.session.context import SessionContext, project_path
from pi_compact.session.entries import message_of_entry
from pi_compact.settings import CompactionSettings

SkipReason = Literal["no_messages", "already_compacted", "too_small", "no_gain", "loop_guard"]
"""Why a compaction wrote nothing without failing: an empty branch, a branch that ends with a compaction
(or cannot be planned), one whose every message fits in the kept recent part (these three are known
before any model call: ``skip_reason``), a summary that would not make the context smaller, or
automatic compaction stopped by the session's loop guard."""


@dataclass(frozen=True)
class CompactionPlan:
    """Everything a summarizer needs, and where the kept region starts."""

    first_kept_entry_id: str
    first_kept_entry_index: int
    is_split_turn: bool
    tokens_before: int
    messages_to_summarize: tuple[Message, ...]
    summarize_entry_ids: tuple[str, ...]
    turn_prefix_messages: tuple[Message, ...]
    turn_prefix_entry_ids: tuple[str, ...]
    previous_summary: str | None
    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    kept_messages: tuple[Message, ...] = field(default=())
    # The kept region holds more than keepRecentTokens: no valid cut followed the message that filled it
    # (``CutPoint.over_budget``).
    kept_over_budget: bool = False
    # The previous compaction's ``details.kept`` (what ``compaction.kept`` carries on; empty when that
    # compaction was pi's or an extension's).
    previous_kept: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_empty(self) -> bool:
        """Nothing would be summarized (pi 0.73.1 still plans this; we refuse to spend a call on it)."""
        return not self.messages_to_summarize and not self.turn_prefix_messages


def skip_reason(
    path: Sequence[Mapping[str, Any]], plan: CompactionPlan | None
) -> Literal["no_messages", "already_compacted", "too_small"] | None:
    """Why compacting ``path`` (planned as ``plan``) would summarize nothing; None when it would not."""
    if plan is None:
        return "already_compacted" if path else "no_messages"
    return "too_small" if plan.is_empty else None


def _messages(path: Sequence[Mapping[str, Any]], start: int, end: int) -> tuple[list[Message], list[str]]:
    messages: list[Message] = []
    ids: list[str] = []
    for entry in path[start:end]:
        # Compaction entries give nothing here: the previous summary travels as previous_summary.
        message = message_of_entry(entry)
        if message is not None:
            messages.append(message)
            ids.append(str(entry.get("id")))
    return messages, ids


def prepare_compaction(
    path: Sequence[Mapping[str, Any]],
    settings: CompactionSettings,
    estimator: Estimator | None = None,
    context: SessionContext | None = None,
    *,
    keep_newest: bool = False,
) -> CompactionPlan | None:
    """Plan a compaction of a root-first path; None when its last entry is already a compaction.

    ``context`` is ``project_path(path)``, for a caller that has it already. ``keep_newest``: never
    summarize the newest tool result of a turn in progress (``cut.keep_newest_result``; the session's
    compactions, not pi's plan of a file).
    """
    if not path or path[-1].get("type") == "compaction":
        return None
    estimate = estimator or estimator_for(settings.token_estimator)
    previous_index = -1
    for index in range(len(path) - 1, -1, -1):
        if path[index].get("type") == "compaction":
            previous_index = index
            break
    previous = path[previous_index] if previous_index >= 0 else None
    start = 0
    if previous is not None:
        start = previous_index + 1
        kept_id = previous.get("firstKeptEntryId")
        for index, entry in enumerate(path):
            if entry.get("id") == kept_id:
                start = index
                break

    context_messages = (context if context is not None else project_path(path)).messages
    tokens_before = estimate_context_tokens(context_messages, estimate).tokens

    cut = find_cut_point(path, start, len(path), settings.keep_recent_tokens, estimate)
    if keep_newest:
        cut = keep_newest_result(path, start, len(path), cut)
    first_kept = path[cut.first_kept_entry_index] if cut.first_kept_entry_index < len(path) else None
    if first_kept is None or not first_kept.get("id"):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize, summarize_ids = _messages(path, start, history_end)
    prefix: list[Message] = []
    prefix_ids: list[str] = []
    if cut.is_split_turn:
        prefix, prefix_ids = _messages(path, cut.turn_start_index, cut.first_kept_entry_index)

    ops = FileOps()
    previous_summary = None
    previous_kept: Mapping[str, Any] = {}
    if previous is not None:
        summary = previous.get("summary")
        previous_summary = summary if isinstance(summary, str) else None
        if not previous.get("fromHook"):
            ops.seed(previous.get("details"))
            details = previous.get("details")
            kept_items = details.get("kept") if isinstance(details, Mapping) else None
            previous_kept = kept_items if isinstance(kept_items, Mapping) else {}
    for message in (*to_summarize, *prefix):
        ops.add_from(message)
    read_files, modified_files = file_lists(ops)
    kept, _ = _messages(path, cut.first_kept_entry_index, len(path))

    return CompactionPlan(
        first_kept_entry_id=str(first_kept["id"]),
        first_kept_entry_index=cut.first_kept_entry_index,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        messages_to_summarize=tuple(to_summarize),
        summarize_entry_ids=tuple(summarize_ids),
        turn_prefix_messages=tuple(prefix),
        turn_prefix_entry_ids=tuple(prefix_ids),
        previous_summary=previous_summary,
        read_files=tuple(read_files),
        modified_files=tuple(modified_files),
        kept_messages=tuple(kept),
        kept_over_budget=cut.over_budget,
        previous_kept=previous_kept,
    )
