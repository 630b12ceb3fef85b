"""What the session says after a compaction, as warning texts (pure: the session emits them).

- the context is still past the threshold (naming the biggest kept message);
- the pins are over ``compaction.pinBudget`` (they are still sent in full);
and it tells the loop guard how an automatic compaction went, so that two futile ones in a row stop
automatic compaction (``LoopGuard``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pi_compact.agent.guard import LoopGuard
from pi_compact.agent.notices import still_too_full
from pi_compact.compaction.threshold import should_compact
from pi_compact.compaction.tokens import ContextUsage, Estimator, estimate_text_tokens
from pi_compact.messages import Message
from pi_compact.session.pins import Pin, budget_warning, pin_budget
from pi_compact.settings import CompactionSettings


def after_compaction(
    usage: ContextUsage, messages: Sequence[Message], estimator: Estimator, budgets: CompactionSettings,
    pins: Sequence[Pin], guard: LoopGuard, *, automatic: bool, tokens_before: int,
) -> list[str]:
    """The warnings to show after a written compaction; records an automatic one with ``guard``."""
    warnings: list[str] = []
    if should_compact(usage.tokens, usage.context_window, replace(budgets, enabled=True)):
        warnings.append(still_too_full(usage, messages, estimator))
    if automatic:
        guard.compacted(tokens_before, usage.tokens, usage.threshold)
    over = budget_warning(pins, pin_budget(budgets.pin_budget, usage.context_window),
                          lambda text: estimate_text_tokens(text, budgets.token_estimator))
    if over is not None:
        warnings.append(over)
    return warnings
