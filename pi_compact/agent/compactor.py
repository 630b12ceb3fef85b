"""The one compaction pipeline: plan, let extensions intervene, summarize, append, report.

Manual ``/compact``, the threshold check and overflow recovery all call ``Compactor.run``. It emits
exactly one ``CompactionStart`` and exactly one ``CompactionEnd`` for it, whatever happens, except
that an automatic compaction with nothing to compact emits nothing (pi 0.80.2; manual reports it). The
session file changes only by one appended compaction entry, and only after the summary is complete:
a cancel or an error leaves it byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pi_compact.agent.events import CompactionEnd, CompactionReason, CompactionStart, Retry, SessionEvent
from pi_compact.agent.guard import LoopGuard
from pi_compact.agent.summary_model import Summarizer, write_summary
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.compaction.plan import CompactionPlan, SkipReason, prepare_compaction, skip_reason
from pi_compact.compaction.summarize import CompactionResult, estimated_tokens_after
from pi_compact.compaction.tokens import estimate_tokens_auto
from pi_compact.errors import Cancelled, PiCompactError
from pi_compact.llm.protocol import ChatModel, Retrying
from pi_compact.session.context import project_path
from pi_compact.session.entries import Entry
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings, Settings


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


# Makes the summary of a plan: (plan, instructions, cancel) -> result; raises Cancelled on cancel.
SummarySource = Callable[[CompactionPlan, "str | None", CancelToken], CompactionResult]


class CompactionHooks(Protocol):
    """Extension points around a compaction (pi's session_before_compact / session_compact)."""

    def before_compact(self, event: BeforeCompactEvent) -> HookDecision | None: ...

    def after_compact(self, entry: Entry, from_extension: bool) -> None: ...


def result_json(result: CompactionResult) -> dict[str, Any]:
    """The ``result`` object of a compaction_end event (pi's field names)."""
    return {
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
        "estimatedTokensAfter": result.estimated_tokens_after,
        "details": result.details,
    }


def compaction_entry_fields(result: CompactionResult, plan: CompactionPlan, retain_tail: bool) -> dict[str, Any]:
    """The compaction entry pi writes, plus our self-contained ``retainedTail`` checkpoint."""
    fields: dict[str, Any] = {
        "type": "compaction",
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
        "details": result.details,
        "fromHook": result.source == "extension",
    }
    if retain_tail and result.first_kept_entry_id == plan.first_kept_entry_id:
        fields["retainedTail"] = [dict(m) for m in plan.kept_messages]
    return fields


@dataclass
class Compactor:
    """Runs compactions of one session with one model; reports through ``emit``."""

    store: SessionStore
    model: ChatModel
    settings: Settings
    emit: Callable[[SessionEvent], None]
    hooks: CompactionHooks | None = None
    now_ms: Callable[[], int] = now_ms
    allow_fallback: bool = True  # False: a failed model summary fails the compaction (``--no-fallback``)
    # Why an automatic compaction gained nothing (the loop guard's diagnosis); None: only the numbers.
    diagnose: Callable[[], str] | None = None
    guard: LoopGuard | None = None  # the session's loop guard: a stopped one refuses automatic compaction
    summarizer: Summarizer | None = None  # ``compaction.model``; None: the chat model writes summaries

    def run(
        self,
        reason: CompactionReason,
        *,
        instructions: str | None = None,
        cancel: CancelToken | None = None,
        will_retry: bool = False,
        context_percent: float | None = None,
        planned: tuple[list[Entry], CompactionPlan | None] | None = None,
        summary: SummarySource | None = None,
    ) -> CompactionResult | None:
        """Compact now. Returns the result, or None when nothing was written (see the end event).

        ``planned``: the branch and its plan with these settings, made by the caller just before.
        ``summary``: where the summary comes from instead of ``model_summary`` (one made ahead).
        """
        if reason != "manual" and self.guard is not None and self.guard.stopped:
            return None  # the user was told once, when the guard stopped automatic compaction
        token = cancel or CancelToken()
        if planned is not None:
            branch, plan = planned
        else:
            # What a plan reads (session/lazy.py); an extension gets the whole branch, as in pi.
            branch = self.store.branch() if self.hooks is not None else self.store.branch_tail()
            plan = prepare_compaction(branch, self.settings.compaction)
        skip = skip_reason(branch, plan)
        if skip is not None and reason != "manual":
            # pi 0.80.2: an automatic check with nothing to compact emits nothing. Otherwise a tool loop
            # over one huge message would report a failed compaction after every turn. The loop guard
            # still counts it: past the threshold with nothing to compact, compaction cannot help.
            if skip == "too_small" and self.guard is not None:
                self.guard.futile()
            return None
        self.emit(CompactionStart(reason, context_percent))
        if skip is not None or plan is None:
            skip = skip or "already_compacted"  # (no plan always has a skip reason)
            self.emit(CompactionEnd(reason, None, error_message=SKIP_TEXT[skip], skipped=skip))
            return None
        try:
            result, entry = self._compact(reason, instructions, token, branch, plan, summary or self.model_summary)
        except (Cancelled, KeyboardInterrupt):
            self.emit(CompactionEnd(reason, None, aborted=True))
            return None
        except NoGain as exc:
            text = str(exc)
            if reason != "manual" and self.guard is not None:
                self.guard.futile()
            if reason != "manual" and self.diagnose is not None:
                text = f"{text} {self.diagnose()}"
            self.emit(CompactionEnd(reason, None, error_message=text, skipped="no_gain"))
            return None
        except PiCompactError as exc:
            self.emit(CompactionEnd(reason, None, error_message=_failure_text(reason, str(exc))))
            return None
        except OSError as exc:
            # Appending failed (disk full, file replaced, permissions): report it like any failure.
            where = self.store.path or "the session file"
            text = f"cannot write the compaction to {where} ({exc.strerror or exc})."
            self.emit(CompactionEnd(reason, None, error_message=_failure_text(reason, text)))
            return None
        except Exception as exc:
            # A bug (ours or an extension's) still closes the start event before it surfaces.
            self.emit(CompactionEnd(reason, None, error_message=_failure_text(reason, f"unexpected error: {exc!r}")))
            raise
        if self.hooks is not None:
            self.hooks.after_compact(entry, result.source == "extension")
        self.emit(CompactionEnd(reason, result_json(result), will_retry=will_retry))
        return result

    def _compact(
        self, reason: CompactionReason, instructions: str | None, cancel: CancelToken, branch: list[Entry],
        plan: CompactionPlan, summary: SummarySource,
    ) -> tuple[CompactionResult, Entry]:
        result: CompactionResult | None = None
        if self.hooks is not None:
            decision = self.hooks.before_compact(BeforeCompactEvent(reason, plan, branch, instructions, cancel))
            if decision is not None and decision.cancel:
                raise Cancelled("Compaction cancelled by an extension.")
            if decision is not None and decision.result is not None:
                result = _from_extension(decision.result)
        if result is None:
            if cancel.cancelled:  # checked before the request goes out, not after its first byte
                raise Cancelled("Compaction cancelled; nothing was written.")
            result = summary(plan, instructions, cancel)
        if cancel.cancelled:
            raise Cancelled("Compaction cancelled; nothing was written.")
        result = _with_stats(result, plan)
        before = sum(estimate_tokens_auto(m) for m in project_path(branch).messages)
        if result.estimated_tokens_after >= before:
            # No inflation: the summary plus the kept part would not be smaller than the context now.
            raise NoGain(
                f"Nothing gained: the summary and the kept messages (~{result.estimated_tokens_after:,} tokens) "
                f"would not be smaller than the context (~{before:,} tokens), so nothing was written."
            )
        fields = compaction_entry_fields(result, plan, self.settings.compaction.retain_tail)
        entry = self.store.append(fields, self.now_ms())
        return result, entry

    def model_summary(self, plan: CompactionPlan, instructions: str | None, cancel: CancelToken) -> CompactionResult:
        """The model's summary of ``plan`` (the one summarizer call; a background summary is made with it too):
        by the compaction model when one is set, sized for its window (agent/summary_model.py)."""
        return write_summary(plan, self.model, self.summarizer, self.settings.compaction.reserve_tokens,
                             instructions=instructions, cancel=cancel, allow_fallback=self.allow_fallback,
                             on_retry=self._report_retry)

    def _report_retry(self, retry: Retrying) -> None:
        self.emit(Retry(retry.attempt, retry.max_attempts, retry.delay_ms, retry.error_message))


class NoGain(Exception):
    """A finished summary that would not make the context smaller: it is not written."""


# The sentence a manual compaction with nothing to summarize ends with (its end event's error_message).
SKIP_TEXT: dict[SkipReason, str] = {
    "no_messages": "Nothing to compact (no messages yet).",
    "already_compacted": "Already compacted: the session ends with a compaction.",
    "too_small": "Nothing to compact (session too small).",
}


def nothing_to_compact(branch: list[Entry], settings: CompactionSettings) -> bool:
    """True when a compaction of ``branch`` would find nothing to summarize."""
    return skip_reason(branch, prepare_compaction(branch, settings)) is not None


def _from_extension(result: CompactionResult) -> CompactionResult:
    if result.estimated_tokens_after:
        return CompactionResult(**{**vars(result), "source": "extension"})
    after = estimated_tokens_after(result.summary, ())
    return CompactionResult(**{**vars(result), "source": "extension", "estimated_tokens_after": after})


def _with_stats(result: CompactionResult, plan: CompactionPlan) -> CompactionResult:
    """Record how the compaction went in ``details`` (pi reads only readFiles/modifiedFiles there)."""
    details = {
        "readFiles": list(plan.read_files),
        "modifiedFiles": list(plan.modified_files),
        **result.details,
        "source": result.source,
        "summarizedEntries": len(plan.summarize_entry_ids) + len(plan.turn_prefix_entry_ids),
        "keptMessages": len(plan.kept_messages),
        "splitTurn": plan.is_split_turn,
    }
    return CompactionResult(**{**vars(result), "details": details})


def _failure_text(reason: CompactionReason, message: str) -> str:
    if reason == "overflow":
        return f"Context overflow recovery failed: {message}"
    if reason == "threshold":
        return f"Auto-compaction failed: {message}"
    return f"Compaction failed: {message}"


__all__ = [
    "BeforeCompactEvent",
    "CompactionHooks",
    "Compactor",
    "HookDecision",
    "NoGain",
    "SKIP_TEXT",
    "SummarySource",
    "compaction_entry_fields",
    "nothing_to_compact",
    "result_json",
]

