"""``session_before_tree`` in Python extensions (pi's hook before a ``/tree`` move).

An extension file (see ``extensions.py``) may define:

    def session_before_tree(event):    # event: navigator.BeforeTreeEvent
        return None                       # go ahead as the user asked
        return {"cancel": True}           # no move
        return {"summary": {"summary": "...", "details": {...}}}   # used if the user asked for one
        return {"customInstructions": "...", "replaceInstructions": True}

Handlers run in load order; the last non-None answer wins and a cancel stops at once. A handler that
raises is reported and skipped (pi's runner semantics, as for compaction hooks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pi_compact.agent.extensions import Extension, ExtensionHooks, Report, ask_extensions
from pi_compact.agent.navigator import BeforeTreeEvent, TreeDecision, TreeHooks


def _decision(answer: Any) -> TreeDecision | None:
    if answer is None or isinstance(answer, TreeDecision):
        return answer
    if not isinstance(answer, Mapping):
        raise TypeError(f"expected None, a dict or TreeDecision, got {type(answer).__name__}")
    if answer.get("cancel"):
        return TreeDecision(cancel=True)
    summary = answer.get("summary")
    text: str | None = None
    details: dict[str, Any] | None = None
    if isinstance(summary, Mapping):
        text = summary.get("summary") if isinstance(summary.get("summary"), str) else None
        details = dict(summary["details"]) if isinstance(summary.get("details"), Mapping) else None
    instructions = answer.get("customInstructions")
    replace = answer.get("replaceInstructions")
    return TreeDecision(
        summary=text or None, details=details,
        instructions=instructions if isinstance(instructions, str) else None,
        replace_instructions=replace if isinstance(replace, bool) else None,
    )


@dataclass
class ExtensionTreeHooks:
    """TreeHooks backed by the loaded extension modules."""

    extensions: list[Extension]
    report: Report

    def before_tree(self, event: BeforeTreeEvent) -> TreeDecision | None:
        return ask_extensions(self.extensions, "session_before_tree", lambda handler: _decision(handler(event)),
                              self.report, "moving as asked")


def tree_hooks_for(hooks: object) -> TreeHooks | None:
    """The tree hooks of a session's compaction hooks, when they come from extension files."""
    if isinstance(hooks, ExtensionHooks):
        return ExtensionTreeHooks(hooks.extensions, hooks.report)
    return None


__all__ = ["ExtensionTreeHooks", "tree_hooks_for"]
