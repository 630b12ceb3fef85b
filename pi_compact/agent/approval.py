"""Approval mode: which tool calls need the user's yes before they run (pure policy, no I/O).

- ``"none"`` (pi's default): nothing is asked. ``"edits"``: ``write`` and ``edit``. ``"all"``: also ``bash``.
- ``ApprovalGate`` holds the policy and the session's "always" answers; it asks through the ``Ask``
  callable it is given (the terminal's prompt, or a refusal where no one can be asked) and answers
  ``allows(name, args, cancel)`` for ``run_tool_calls``. A call that is declined is never run; the
  model gets ``DECLINED`` as an error tool result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_compact.cancel import CancelToken

ApproveMode = Literal["none", "edits", "all"]
Decision = Literal["yes", "no", "always"]
Ask = Callable[[str, Mapping[str, Any], "CancelToken | None"], Decision]

MODES: tuple[ApproveMode, ...] = ("none", "edits", "all")
EDIT_TOOLS = frozenset({"write", "edit"})
DECLINED = "Not run: the user declined this call."


def needs_approval(mode: str, tool_name: str) -> bool:
    """Whether ``mode`` asks before ``tool_name`` runs."""
    if mode == "edits":
        return tool_name in EDIT_TOOLS
    if mode == "all":
        return tool_name in EDIT_TOOLS or tool_name == "bash"
    return False


@dataclass
class ApprovalGate:
    """The approval policy of one session: its mode, how to ask, and the tools allowed for good."""

    mode: str
    ask: Ask
    always: set[str] = field(default_factory=set)

    def allows(self, tool_name: str, args: Mapping[str, Any], cancel: CancelToken | None = None) -> bool:
        """True when the call may run (asking the user when the mode says so)."""
        if not needs_approval(self.mode, tool_name) or tool_name in self.always:
            return True
        if cancel is not None and cancel.cancelled:
            return False
        decision = self.ask(tool_name, args, cancel)
        if decision == "always":
            self.always.add(tool_name)
        return decision in ("yes", "always")


__all__ = ["DECLINED", "EDIT_TOOLS", "MODES", "ApprovalGate", "ApproveMode", "Ask", "Decision", "needs_approval"]
