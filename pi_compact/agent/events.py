"""Session events: what the agent tells its UI (terminal renderer, JSON printer, tests).

Plain frozen dataclasses with a ``type`` tag; ``event_to_json`` gives pi's JSON event shape
(camelCase keys, ``result`` null when absent, ``errorMessage`` only when set, UI-only fields such as
``CompactionStart.context_percent`` left out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # Literals only: the events stay importable without the compaction package
    from pi_compact.compaction.plan import SkipReason
    from pi_compact.llm.failures import FailureKind
    from pi_compact.llm.protocol import Retrying

# Why a compaction runs; every word said about each reason is in ``agent/compaction/reasons.py``.
CompactionReason = Literal["manual", "threshold", "overflow"]


@dataclass(frozen=True)
class AgentStart:
    type: Literal["agent_start"] = "agent_start"


@dataclass(frozen=True)
class AgentEnd:
    error_message: str | None = None
    type: Literal["agent_end"] = "agent_end"


@dataclass(frozen=True)
class MessageStart:
    role: str
    type: Literal["message_start"] = "message_start"


@dataclass(frozen=True)
class MessageUpdate:
    """A streamed delta of the assistant message: ``kind`` is text, thinking or toolCall."""

    kind: str
    delta: str
    type: Literal["message_update"] = "message_update"


@dataclass(frozen=True)
class MessageEnd:
    message: dict[str, Any] = field(hash=False)
    type: Literal["message_end"] = "message_end"


@dataclass(frozen=True)
class ToolExecutionStart:
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = field(hash=False)
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(frozen=True)
class ToolExecutionEnd:
    tool_call_id: str
    tool_name: str
    result: dict[str, Any] = field(hash=False)
    is_error: bool = False
    type: Literal["tool_execution_end"] = "tool_execution_end"


@dataclass(frozen=True)
class CompactionStart:
    reason: CompactionReason
    context_percent: float | None = None
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(frozen=True)
class CompactionEnd:
    """Exactly one per CompactionStart. ``result`` is None when nothing was written.

    ``skipped`` says why when there was nothing to compact (``error_message`` then holds the sentence
    shown for it); consumers test it instead of the wording.
    """

    reason: CompactionReason
    result: dict[str, Any] | None = field(default=None, hash=False)
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    skipped: SkipReason | None = None
    type: Literal["compaction_end"] = "compaction_end"


@dataclass(frozen=True)
class Retry:
    """A transient provider error is being retried; ``kind`` (and ``status``) say what failed, so a reader
    picks its words by them instead of by the text (which is the provider's own, and may say anything)."""

    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    kind: FailureKind = "unknown"
    status: int | None = None
    type: Literal["auto_retry_start"] = "auto_retry_start"

    @classmethod
    def of(cls, retrying: Retrying) -> Retry:
        """The session's event for the model's ``Retrying``."""
        return cls(retrying.attempt, retrying.max_attempts, retrying.delay_ms, retrying.error_message,
                   retrying.kind, retrying.status)


@dataclass(frozen=True)
class Notice:
    """Something the user should read (a warning, an extension error); never a failure of the turn."""

    text: str
    level: Literal["info", "warning", "error"] = "info"
    type: Literal["notice"] = "notice"


@dataclass(frozen=True)
class TreeOutcome:
    """Where a move left the session."""

    old_leaf: str | None
    position: str | None  # where the branch now continues from (the summary or marker hangs here)
    leaf: str | None  # the new leaf: the summary or marker entry just written
    summary: str | None = None
    source: str | None = None  # "model", "fallback" or "extension" when summarized
    summarized: int = 0  # entries of the branch left behind
    resend_text: str | None = None  # the user message moved to, to send again or rewrite
    details: dict[str, Any] | None = field(default=None, hash=False)


@dataclass(frozen=True)
class TreeStart:
    target_id: str
    summarize: bool
    type: Literal["tree_start"] = "tree_start"


@dataclass(frozen=True)
class TreeEnd:
    """Exactly one per ``TreeStart``; ``outcome`` is None when nothing was written."""

    outcome: TreeOutcome | None = None
    aborted: bool = False
    error_message: str | None = None
    type: Literal["tree_end"] = "tree_end"


@dataclass(frozen=True)
class UncompactOutcome:
    """An undone compaction: which one, the restored context's size, and what that means."""

    compaction_id: str
    position: str | None
    tokens: int  # the restored context, as estimated (last usage + what follows)
    context_window: int | None
    threshold: int | None
    left_behind: int
    dropped_pins: tuple[str, ...] = ()  # texts of pins made after the compaction, off the restored branch

    @property
    def over_threshold(self) -> bool:
        return self.threshold is not None and self.tokens > self.threshold


SessionEvent = (
    AgentStart | AgentEnd | MessageStart | MessageUpdate | MessageEnd | ToolExecutionStart | ToolExecutionEnd
    | CompactionStart | CompactionEnd | Retry | Notice | TreeStart | TreeEnd
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# Fields for our own terminal and commands only: pi's JSON events have no such keys, and JSON-mode
# consumers written for pi check the exact key sets (compaction_start is exactly {type, reason}).
_UI_ONLY_FIELDS = frozenset({"context_percent", "skipped", "kind", "status"})


def event_to_json(event: SessionEvent) -> dict[str, Any]:
    """pi's JSON shape of an event: camelCase keys, optional error text omitted when unset."""
    out: dict[str, Any] = {"type": event.type}
    for key, value in vars(event).items():
        if key == "type" or key in _UI_ONLY_FIELDS:
            continue
        if key == "error_message" and value is None:
            continue
        out[_camel(key)] = value
    return out
