"""Summarizing a branch the user leaves with ``/tree``, through the compaction summarizer (model as parameter).

pi's branch summarization with our summarizer underneath: sized requests, chunks, a heading retry, a
model-free fallback and ``Cancelled`` on cancel, as a compaction gets. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pi_compact.cancel import CancelToken
from pi_compact.compaction.fileops import FileOps, file_lists
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.prompts import BRANCH_FOCUS, BRANCH_PREAMBLE
from pi_compact.compaction.summarize import Source, SummaryBudget, summarize
from pi_compact.compaction.tokens import Estimator
from pi_compact.llm.protocol import ChatModel
from pi_compact.messages import Message
from pi_compact.session.entries import compaction_message, message_of_entry

NO_CONTENT = "No content to summarize"


@dataclass(frozen=True)
class BranchSummary:
    """A finished branch summary and the ``details`` of its entry."""

    summary: str
    details: dict[str, Any] = field(hash=False)
    source: Source = "model"
    summarized: int = 0  # messages sent to the summarizer


def _message(entry: Mapping[str, Any]) -> Message | None:
    kind = entry.get("type")
    if kind == "compaction":
        return compaction_message(entry)
    message = message_of_entry(entry)
    if message is None or message.get("role") == "toolResult":
        return None
    return message


# What differs from a compaction is the selection:
# - tool results are left out (the tool call carries what matters), compactions speak as their summary, settings
#   and extension entries say nothing (pi's ``prepareBranchEntries``);
# - newest first until ``token_budget`` is used up, with a summary entry still taken while under 90 %;
# - file lists start from earlier branch summaries' details (not from compactions', as pi does).
def prepare_branch(
    entries: Sequence[Mapping[str, Any]], token_budget: int, estimate: Estimator
) -> tuple[list[Message], FileOps]:
    """The messages to summarize (oldest first) within ``token_budget`` (0: no limit), and the files."""
    ops = FileOps()
    for entry in entries:
        if entry.get("type") == "branch_summary" and not entry.get("fromHook"):
            ops.seed(entry.get("details"))
    messages: list[Message] = []
    total = 0
    for entry in reversed(entries):
        message = _message(entry)
        if message is None:
            continue
        ops.add_from(message)
        tokens = estimate(message)
        if token_budget > 0 and total + tokens > token_budget:
            # A summary is worth squeezing in while there is still room for most of it.
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.append(message)
            break
        messages.append(message)
        total += tokens
    messages.reverse()
    return messages, ops


def summarize_branch(
    entries: Sequence[Mapping[str, Any]],
    model: ChatModel,
    budget: SummaryBudget,
    *,
    token_budget: int,
    estimate: Estimator,
    instructions: str | None = None,
    replace_instructions: bool = False,
    cancel: CancelToken | None = None,
    allow_fallback: bool = True,
) -> BranchSummary:
    """Summarize the abandoned ``entries`` (oldest first); raises ``Cancelled`` when cancelled.

    ``instructions`` add a focus; with ``replace_instructions`` they replace our branch framing.
    """
    messages, ops = prepare_branch(entries, token_budget, estimate)
    read_files, modified_files = file_lists(ops)
    details: dict[str, Any] = {"readFiles": read_files, "modifiedFiles": modified_files}
    if not messages:
        return BranchSummary(NO_CONTENT, details, "model", 0)
    plan = CompactionPlan(
        first_kept_entry_id="", first_kept_entry_index=0, is_split_turn=False,
        tokens_before=sum(estimate(m) for m in messages), messages_to_summarize=tuple(messages),
        summarize_entry_ids=(), turn_prefix_messages=(), turn_prefix_entry_ids=(), previous_summary=None,
        read_files=tuple(read_files), modified_files=tuple(modified_files),
    )
    if replace_instructions and instructions:
        focus = instructions
    else:
        focus = BRANCH_FOCUS + (f"\n{instructions}" if instructions else "")
    result = summarize(plan, model, replace(budget, must_shrink=False), instructions=focus, cancel=cancel,
                       allow_fallback=allow_fallback)
    if result.source == "fallback":
        details.update({"fallback": True, "error": result.error})
    return BranchSummary(BRANCH_PREAMBLE + result.summary, details, result.source, len(messages))


__all__ = ["NO_CONTENT", "BranchSummary", "prepare_branch", "summarize_branch"]
