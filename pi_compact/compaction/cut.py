"""Where to cut: which entries may start the kept region, and where pi would cut (pure).

The rules follow pi 0.73.1 exactly so both tools plan the same cut on the same file, quirks included
(see ``find_cut_point``). One addition, where pi's rule finds no cut at all: when no valid point
follows the message that fills the budget, pi keeps everything; we cut at the latest valid point
before it instead (``CutPoint.over_budget``), so a huge newest tool result never hides the older
turns from compaction. And one rule pi lacks: the newest tool result of the turn in progress is what
the model is working on (the file the user asked about), so no compaction the session makes during
that turn summarizes it (``keep_newest_result``): a failed reply after it (an overflow) is no reason to
cut past it. (A dry run or ``compact FILE`` plans as pi does.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.compaction.tokens import Estimator, estimate_tokens_chars4

# A kept region may start at any message a user or the model produced, but never at a tool result:
# a tool result must stay behind the tool call that asked for it.
_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = frozenset({"user", "bashExecution"})


def _role(entry: Mapping[str, Any]) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, (dict, Mapping)) else None


def is_cut_point(entry: Mapping[str, Any]) -> bool:
    """May the kept region start at this entry?"""
    kind = entry.get("type")
    if kind == "message":
        return _role(entry) in _CUT_ROLES
    return kind in ("branch_summary", "custom_message")


def find_valid_cut_points(entries: Sequence[Mapping[str, Any]], start: int, end: int) -> list[int]:
    """Indices in [start, end) where the kept region may start."""
    return [i for i in range(start, end) if is_cut_point(entries[i])]


def _first_cut_point(entries: Sequence[Mapping[str, Any]], start: int, end: int) -> int | None:
    """The first index in [start, end) where the kept region may start, or None."""
    return next((i for i in range(start, end) if is_cut_point(entries[i])), None)


def _last_cut_point(entries: Sequence[Mapping[str, Any]], start: int, end: int) -> int | None:
    """The last index in [start, end) where the kept region may start, or None."""
    return next((i for i in range(end - 1, start - 1, -1) if is_cut_point(entries[i])), None)


def find_turn_start_index(entries: Sequence[Mapping[str, Any]], index: int, start: int) -> int:
    """The entry that began the turn containing ``index`` (scanning back to ``start``), or -1."""
    for i in range(index, start - 1, -1):
        entry = entries[i]
        kind = entry.get("type")
        if kind in ("branch_summary", "custom_message"):
            return i
        if kind == "message" and _role(entry) in _TURN_START_ROLES:
            return i
    return -1


@dataclass(frozen=True)
class CutPoint:
    """Index of the first kept entry, the start of the turn it splits (or -1), and whether it splits.

    ``over_budget``: no valid point followed the message that filled ``keepRecentTokens``, so the cut
    is before it and the kept region holds more than the budget (pi would have kept everything).
    """

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool
    over_budget: bool = False


def find_cut_point(
    entries: Sequence[Mapping[str, Any]],
    start: int,
    end: int,
    keep_recent_tokens: int,
    estimator: Estimator = estimate_tokens_chars4,
) -> CutPoint:
    """Keep about ``keep_recent_tokens`` of the newest messages; cut at the next valid point.

    Walk back from the end summing message estimates; once the budget is reached, cut at the first
    valid point at or after that message (so a tool result moves the cut forward). When there is
    none (the budget is filled by a tool result at the end: a tool loop's big newest output), pi
    keeps everything; we cut at the latest valid point before that message instead, keeping more
    than the budget but summarizing what is older (``over_budget``). A cut at an assistant message
    there splits the turn, as pi does for one turn larger than the budget. Then pull the
    non-message entries just before the cut (settings changes, labels...) into the kept region.

    pi quirks kept on purpose, for identical plans on identical files:
    - only ``message`` entries count toward the budget (custom_message / branch_summary are free);
    - when the backward pull puts a settings or label entry in front of a user message, the cut is no
      longer "at a user message", so a finished turn is reported as a split turn whose prefix is the
      whole previous turn;
    - a cut at a bashExecution / custom_message / branch_summary is a split turn with an empty prefix.
    """
    # Valid points are looked for only where needed (near both ends), not across a long history.
    first = _first_cut_point(entries, start, end)
    if first is None:
        return CutPoint(start, -1, False)
    cut = first
    over_budget = False
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if entry.get("type") != "message":
            continue
        accumulated += estimator(entry["message"])
        if accumulated >= keep_recent_tokens:
            later = _first_cut_point(entries, i, end)
            if later is not None:
                cut = later
            else:  # pi keeps the first of all here; the latest point before the message still frees the rest
                earlier = _last_cut_point(entries, first, i)
                if earlier is not None and earlier > first:
                    cut, over_budget = earlier, True
            break
    while cut > start:
        kind = entries[cut - 1].get("type")
        if kind in ("compaction", "message"):
            break
        cut -= 1
    cut_entry = entries[cut]
    at_user = cut_entry.get("type") == "message" and _role(cut_entry) == "user"
    turn_start = -1 if at_user else find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, not at_user and turn_start != -1, over_budget)


def _newest_turn_result(entries: Sequence[Mapping[str, Any]], start: int, end: int) -> int | None:
    """The newest tool result in [start, end) when the turn is still in progress: nothing after it but
    failed replies (an overflow), and no user message."""
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if entry.get("type") != "message":
            continue
        role = _role(entry)
        if role == "toolResult":
            return i
        if role != "assistant" or entry["message"].get("stopReason") not in ("error", "length", "aborted"):
            return None  # a user message, or an answer: the turn is over
    return None


def keep_newest_result(entries: Sequence[Mapping[str, Any]], start: int, end: int, cut: CutPoint) -> CutPoint:
    """``cut``, moved back to the assistant message that called the turn's newest tool result when it
    would summarize that result (a split turn then, the older part of the turn its prefix)."""
    newest = _newest_turn_result(entries, start, end)
    if newest is None or newest >= cut.first_kept_entry_index:
        return cut
    call = _last_cut_point(entries, start, newest)
    if call is None or _role(entries[call]) != "assistant":
        return cut
    turn_start = find_turn_start_index(entries, call, start)
    return CutPoint(call, turn_start, turn_start != -1, True)
