"""When a session compacts: one pure decision that every automatic site asks (pi's ``_checkCompaction``).

``decide`` takes plain values measured at the site (the context's size, the fitted budgets, whether
the reply in question overflowed, the switches and the loop guard) and names the reason, or None.
``coordinator.py``'s ``Compactions`` is a session's side of it: it measures at each site, asks ``decide``
and runs what was chosen.
"""

from __future__ import annotations

from typing import Literal

from pi_compact.agent.events import CompactionReason
from pi_compact.settings import CompactionSettings

# Where the session asks: before a prompt is sent, after each model reply (overflows only: the
# threshold is checked once the reply's tools have run), between tool turns, after the run, after
# a model switch.
Point = Literal["before_prompt", "reply", "tool_turn", "after_run", "model_switch"]


def decide(
    point: Point,
    *,
    tokens: int,
    context_window: int,
    budgets: CompactionSettings,
    auto: bool = True,
    guard_stopped: bool = False,
    overflowed: bool = False,
    overflow_given_up: bool = False,
    summary_ready: bool = False,
    cancelled: bool = False,
    threshold: int = 0,
) -> CompactionReason | None:
    """The reason to compact now, or None.

    Args:
        tokens: the context's size now (last fresh usage plus estimates).
        budgets: the compaction settings fitted to the window (``enabled`` and ``reserveTokens`` count).
        auto: automatic compaction is on for this session (``/autocompact``, ``--no-auto-compact``).
        guard_stopped: the loop guard stopped automatic compaction (it said so once).
        overflowed: the reply in question (the new one, or before a prompt the last fresh one)
            is a context overflow.
        overflow_given_up: that overflow already had its one compact-and-retry.
        summary_ready: a summary made in the background is finished and still applies.
        cancelled: the turn was cancelled: nothing starts after a cancel.
        threshold: the plan's threshold (``compaction.window``: ``window - reserveTokens``, lower where the
            output cap needs more room); ignored while the window is unknown (0).
    """
    if cancelled or not auto or guard_stopped:
        return None
    if overflowed and not overflow_given_up and point in ("before_prompt", "reply"):
        return "overflow"
    if overflowed and point in ("reply", "after_run"):
        return None  # the run handled it (compacted, or gave up and said so)
    if point == "reply":
        return None
    past = budgets.enabled and context_window > 0 and tokens > threshold
    if past or (budgets.enabled and summary_ready):
        return "threshold"
    return None


__all__ = ["Point", "decide"]
