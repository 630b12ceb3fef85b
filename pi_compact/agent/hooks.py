"""What an extension's compaction and tree hooks see and answer: plain values, no behaviour.

They live below both their users: the compaction wing (``compaction/pipeline.py``,
``compaction/navigator.py``) builds the events and reads the answers, and ``extensions.py`` turns a
handler's return value into an answer, without either importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pi_compact.agent.events import CompactionReason
from pi_compact.cancel import CancelToken
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.session.entries import Entry


@dataclass(frozen=True)
class BeforeCompactEvent:
    """What a ``session_before_compact`` hook sees."""

    reason: CompactionReason
    plan: CompactionPlan
    branch_entries: list[Entry] = field(hash=False)
    instructions: str | None
    cancel: CancelToken


@dataclass(frozen=True)
class HookDecision:
    """A hook's answer: cancel the compaction, or supply the result itself."""

    cancel: bool = False
    result: CompactionResult | None = None


@dataclass(frozen=True)
class BeforeTreeEvent:
    """What a ``session_before_tree`` hook sees (pi's TreePreparation)."""

    target_id: str
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[Entry] = field(hash=False)
    user_wants_summary: bool = False
    instructions: str | None = None
    replace_instructions: bool = False
    cancel: CancelToken | None = None


@dataclass(frozen=True)
class TreeDecision:
    """A hook's answer: cancel, supply the summary (used only if one was asked for), or change the
    instructions (None keeps them)."""

    cancel: bool = False
    summary: str | None = None
    details: dict[str, Any] | None = None
    instructions: str | None = None
    replace_instructions: bool | None = None


__all__ = ["BeforeCompactEvent", "BeforeTreeEvent", "HookDecision", "TreeDecision"]
