"""The one compaction pipeline: plan, let extensions intervene, summarize, append, report.

Every compaction (``/compact``, the CLI, whatever ``triggers.decide`` chose) runs through
``Compactor.run``: exactly one ``CompactionStart`` and one ``CompactionEnd``, except that an automatic
one with nothing to compact emits nothing (pi 0.80.2). The file changes only by one appended entry,
whose ``details`` are built here (``CompactionDetails``), after the summary is complete: a cancel or
an error leaves it byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pi_compact.agent.compaction import engines
from pi_compact.agent.compaction.guard import LoopGuard, top_consumers, window_hint
from pi_compact.agent.compaction.reasons import (
    SKIP_TEXT,
    CompactionReason,
    too_big_message_text,
    too_small_text,
    words,
)
from pi_compact.agent.compaction.summarizer import Summarizer, write_summary
from pi_compact.agent.events import CompactionEnd, CompactionStart, Notice, Retry, SessionEvent
from pi_compact.agent.hooks import BeforeCompactEvent, HookDecision
from pi_compact.agent.request import Sent
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction, skip_reason
from pi_compact.compaction.reuse import PrefixShape
from pi_compact.compaction.summarize import CompactionResult, estimated_tokens_after
from pi_compact.compaction.tokens import Estimator, estimate_tokens_auto, estimator_for
from pi_compact.compaction.window import WindowPlan
from pi_compact.errors import Cancelled, PiCompactError
from pi_compact.llm.protocol import ChatModel, ChatRequest, Retrying
from pi_compact.messages import Message, compaction_summary_message
from pi_compact.session.context import project_path
from pi_compact.session.entries import Entry
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings, Settings


@dataclass(frozen=True)
class CompactionDetails:
    """A compaction entry's ``details``: pi reads ``readFiles``/``modifiedFiles``; the rest is ours.

    ``recorded`` is what the summary noted on its way, in order (``fallback``, ``error``,
    ``qualityGate``, ``summaryModel``, ``usage``, ``background``), or an extension's own keys.
    ``to_json`` keeps the key order the session files have always had.
    """

    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    source: str
    summarized_entries: int
    kept_messages: int
    split_turn: bool
    recorded: Mapping[str, Any] = field(default_factory=dict, hash=False)
    kept_over_budget: bool = False  # written only when true: files without it read as before

    @classmethod
    def of(cls, result: CompactionResult, plan: CompactionPlan) -> CompactionDetails:
        """The details of ``result`` made from ``plan`` (the files an extension names win)."""
        noted = dict(result.details)
        return cls(
            _files(noted.pop("readFiles", None), plan.read_files),
            _files(noted.pop("modifiedFiles", None), plan.modified_files),
            result.source,
            len(plan.summarize_entry_ids) + len(plan.turn_prefix_entry_ids),
            len(plan.kept_messages),
            plan.is_split_turn,
            {k: v for k, v in noted.items() if k not in _STATS},
            plan.kept_over_budget,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "readFiles": list(self.read_files),
            "modifiedFiles": list(self.modified_files),
            **self.recorded,
            "source": self.source,
            "summarizedEntries": self.summarized_entries,
            "keptMessages": self.kept_messages,
            "splitTurn": self.split_turn,
            **({"keptOverBudget": True} if self.kept_over_budget else {}),
        }


_STATS = frozenset({"source", "summarizedEntries", "keptMessages", "splitTurn", "keptOverBudget"})


def _files(noted: object, planned: Sequence[str]) -> tuple[str, ...]:
    if isinstance(noted, list) and all(isinstance(name, str) for name in noted):
        return tuple(noted)
    return tuple(planned)


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
    guard: LoopGuard | None = None  # the session's loop guard: told of automatic compactions that gained nothing
    summarizer: Summarizer | None = None  # ``compaction.model``; None: the chat model writes summaries
    thinking: str | None = None  # the session's thinking level: summaries reason at it (``summary_reasoning``)
    # The size of a context of these messages as the session counts it (with the system prompt and tools);
    # None: the messages alone, by the auto estimator.
    measure: Callable[[Sequence[Message]], int] | None = None
    # ``measure`` with the newest tool result cut as the next request carries it (the block's "after").
    measure_sent: Callable[[Sequence[Message]], int] | None = None
    overflow_hint: bool = True  # False: an overflow with nothing to compact is retried with the newest result cut
    # The context's size now as the status line and the threshold count it (the block's "before"); None: the plan's.
    size_now: Callable[[], int] | None = None
    # The session's per-message estimator (what ``/context`` counts a kept tail with); None: the auto estimator.
    estimator: Estimator | None = None
    # The last chat request of this session (``compaction.reusePrefix``); None: no chat request to reuse.
    last_request: Callable[[], ChatRequest | None] | None = None
    # This run's chat requests, for what the provider's cache holds (``prefix_cost``); None or empty: the
    # recorded replies say it.
    sent: Callable[[], Sequence[Sent]] | None = None
    # The session's plan (``compaction.window``); None: a compaction with no session running.
    plan: WindowPlan | None = None
    # What identifies a chat request's cache beside its messages, as this agent sends it (``request.request_digest``):
    # a recorded reply counts as holding a prefix only when it carries the digest of the request asked now.
    request_digest: Callable[[ChatRequest], str] | None = None

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
        automatic = words(reason).automatic
        token = cancel or CancelToken()
        if planned is not None:
            branch, plan = planned
        else:
            # What a plan reads (session/lazy.py); an extension gets the whole branch, as in pi.
            branch = self.store.branch() if self.hooks is not None else self.store.branch_tail()
            plan = prepare_compaction(branch, self.settings.compaction, keep_newest=True)
        skip = skip_reason(branch, plan)
        if skip is not None and automatic:
            # pi 0.80.2: an automatic check with nothing to compact emits nothing. Otherwise a tool loop
            # over one huge message would report a failed compaction after every turn. The loop guard does
            # not count it: no model call was spent, and the next message gives the cut a place.
            if will_retry and self.overflow_hint and not token.cancelled:  # an overflow, yet nothing to compact
                self.emit(Notice(self._overflow_hint(branch), "warning"))
            return None
        self.emit(CompactionStart(reason, context_percent))
        if skip is not None or plan is None:
            skip = skip or "already_compacted"  # (no plan always has a skip reason)
            text = SKIP_TEXT[skip] if skip != "too_small" or plan is None else \
                too_small_text(sum(map(self.estimator or estimate_tokens_auto, plan.kept_messages)),
                               self.settings.compaction.keep_recent_tokens,
                               sum(map(estimator_for(self.settings.compaction.token_estimator), plan.kept_messages)))
            self.emit(CompactionEnd(reason, None, error_message=text, skipped=skip))
            return None
        try:
            made = (lambda p, i, c: engines.noted_local(summary(p, i, c))) if summary is not None else \
                (lambda p, i, c: engines.run(engines.EngineContext(self, reason, branch, p, i, self.now_ms()), c))
            result, entry = self._compact(reason, instructions, token, branch, plan, made)
        except (Cancelled, KeyboardInterrupt):
            self.emit(CompactionEnd(reason, None, aborted=True))
            return None
        except NoGain as exc:
            text = str(exc)
            if automatic and self.guard is not None:
                self.guard.futile("no_gain")
            if automatic and self.diagnose is not None:
                text = f"{text} {self.diagnose()}"
            self.emit(CompactionEnd(reason, None, error_message=text, skipped="no_gain"))
            return None
        except PiCompactError as exc:
            self.emit(CompactionEnd(reason, None, error_message=words(reason).failed(str(exc))))
            return None
        except OSError as exc:
            # Appending failed (disk full, file replaced, permissions): report it like any failure.
            where = self.store.path or "the session file"
            text = f"cannot write the compaction to {where} ({exc.strerror or exc})."
            self.emit(CompactionEnd(reason, None, error_message=words(reason).failed(text)))
            return None
        except Exception as exc:
            # A bug (ours or an extension's) still closes the start event before it surfaces.
            self.emit(CompactionEnd(reason, None, error_message=words(reason).failed(f"unexpected error: {exc!r}")))
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
        result = CompactionResult(**{**vars(result), "details": CompactionDetails.of(result, plan).to_json()})
        measure = self.measure or (lambda messages: sum(estimate_tokens_auto(m) for m in messages))
        before = measure(project_path(branch).messages)
        if self.size_now is not None and result.source != "extension":  # (an extension's figures are its own)
            # One figure (issue 35): the block's "before" is what the status line showed, not a second estimate.
            result = CompactionResult(**{**vars(result), "tokens_before": self.size_now()})
        after = result.estimated_tokens_after
        if result.source != "extension" or not result.estimated_tokens_after:
            # Before and after measured alike: the same estimator, the system prompt and tools on both sides.
            compacted = [compaction_summary_message(result.summary, 0, 0), *plan.kept_messages]
            after = measure(compacted)
            # The block shows what the next request will carry (a kept newest result maybe cut to fit).
            shown = self.measure_sent(compacted) if self.measure_sent is not None else after
            result = CompactionResult(**{**vars(result), "estimated_tokens_after": shown})
        if after >= before:
            # No inflation: the summary plus the kept part would not be smaller than the context now.
            raise NoGain(
                f"Nothing gained: the summary and the kept messages (~{after:,} tokens) "
                f"would not be smaller than the context (~{before:,} tokens), so nothing was written."
            )
        fields = compaction_entry_fields(result, plan, self.settings.compaction.retain_tail)
        entry = self.store.append(fields, self.now_ms())
        return result, entry

    def model_summary(self, plan: CompactionPlan, instructions: str | None, cancel: CancelToken,
                      shape: PrefixShape | None = None) -> CompactionResult:
        """The model's summary of ``plan`` (the one summarizer call; a background summary is made with it too):
        by the compaction model when one is set, sized for its window (``summarizer.py``); on the last chat
        request's prefix when ``shape`` is given."""
        window = self.plan
        planned = (window.output_cap, window.thinking_budget) if window is not None and window.output_cap else None
        return write_summary(plan, self.model, self.summarizer, self.settings.compaction.reserve_tokens,
                             instructions=instructions, cancel=cancel, allow_fallback=self.allow_fallback,
                             on_retry=self._report_retry, thinking=self.thinking, shape=shape, planned=planned)

    def summary_cost(self, reason: CompactionReason) -> float | None:
        """What a compaction for ``reason`` now is expected to cost in input tokens, by the engine it would ask
        first (``engines``); None when it would summarize nothing."""
        branch = self.store.branch() if self.hooks is not None else self.store.branch_tail()
        plan = prepare_compaction(branch, self.settings.compaction)
        if plan is None or skip_reason(branch, plan) is not None:
            return None
        return engines.expected_cost(engines.EngineContext(self, reason, branch, plan, None, self.now_ms()))

    def _overflow_hint(self, branch: list[Entry]) -> str:
        """Why an overflow found nothing to compact: one message larger than the window (named), else
        a window we believe larger than the provider's."""
        estimate = self.estimator or estimator_for(self.settings.compaction.token_estimator)
        info = self.model.info
        biggest = [(size, text) for size, text in top_consumers("", branch, estimate)
                   if not text.startswith("the system prompt")]
        if biggest and 0 < info.context_window < biggest[0][0]:
            return too_big_message_text(biggest[0][1], info.context_window, info.model)
        return window_hint(info)

    def _report_retry(self, retry: Retrying) -> None:
        self.emit(Retry.of(retry))


class NoGain(Exception):
    """A finished summary that would not make the context smaller: it is not written."""


def nothing_to_compact(branch: list[Entry], settings: CompactionSettings) -> bool:
    """True when a compaction of ``branch`` would find nothing to summarize."""
    return skip_reason(branch, prepare_compaction(branch, settings, keep_newest=True)) is not None


def _from_extension(result: CompactionResult) -> CompactionResult:
    if result.estimated_tokens_after:
        return CompactionResult(**{**vars(result), "source": "extension"})
    after = estimated_tokens_after(result.summary, ())
    return CompactionResult(**{**vars(result), "source": "extension", "estimated_tokens_after": after})


__all__ = ["BeforeCompactEvent", "CompactionDetails", "CompactionHooks", "Compactor", "HookDecision", "NoGain",
           "SummarySource", "compaction_entry_fields", "nothing_to_compact", "result_json"]
