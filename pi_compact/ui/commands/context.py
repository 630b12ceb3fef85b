"""``/context``: how full the context is, its limits, the estimator, the last usage and the breakdown."""

from __future__ import annotations

from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.status import context_report


def context(state: ReplState, arg: str) -> Outcome:
    state.console.print(context_report(state.session, state.model_name))
    return "continue"
