"""Compaction in the background (``compaction.background``): a summary made ahead, committed at a turn boundary.

- ``tend``, at every turn boundary: past the soft threshold, starts ``SummaryJob`` (a daemon thread
  that only calls the model) for the plan a compaction now would make; says when a finished job
  still applies, so that ``triggers.decide`` compacts now.
- ``run`` commits it through the one ``Compactor`` pipeline (same events, hooks, checks and entry,
  ``details.background`` true). A job whose plan no longer holds, that failed, or whose kept tail
  grew past the soft threshold is dropped silently; after a failure none starts before the next
  compaction. Nothing here writes the session file; ``close`` cancels the job and waits for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pi_compact.agent.compaction.pipeline import Compactor
from pi_compact.agent.compaction.reasons import CompactionReason
from pi_compact.agent.events import Notice, SessionEvent
from pi_compact.cancel import CancelToken
from pi_compact.compaction.ahead import Ahead, past_soft_threshold, plan_ahead, rebase
from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.summarize import CompactionResult, estimated_tokens_after
from pi_compact.compaction.tokens import ContextUsage, Estimator
from pi_compact.errors import Cancelled
from pi_compact.messages import Message
from pi_compact.session.entries import Entry

THREAD_NAME = "pi-background-summary"
_POLL_S = 0.05
_JOIN_S = 5.0  # a cancelled stream stops within ~0.1 s; this only bounds a stuck provider library


class _JobToken(CancelToken):
    """Cancelled by ``cancel()`` or by the token of the turn running now: Ctrl-C stops the job too.

    A turn's cancel, once seen, sticks: the next turn's fresh token does not revive the job."""

    def __init__(self, turn: Callable[[], CancelToken | None]) -> None:
        super().__init__()
        self._turn = turn

    @property
    def cancelled(self) -> bool:
        turn = self._turn()
        if turn is not None and turn.cancelled:
            self.cancel()
        return super().cancelled

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.cancelled:
            left = _POLL_S if end is None else min(_POLL_S, end - time.monotonic())
            if left <= 0:
                return False
            super().wait(left)
        return True


class SummaryJob:
    """One summary made in a daemon thread for ``ahead.plan``; ``result`` is set once it succeeded."""

    def __init__(
        self, ahead: Ahead, summarize: Callable[[CompactionPlan, CancelToken], CompactionResult],
        turn: Callable[[], CancelToken | None],
    ) -> None:
        self.ahead = ahead
        self.cancel = _JobToken(turn)
        self.done = threading.Event()
        self.result: CompactionResult | None = None
        self._summarize = summarize
        self._thread = threading.Thread(target=self._work, name=THREAD_NAME, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _work(self) -> None:
        try:
            result = self._summarize(self.ahead.plan, self.cancel)
            if result.source == "model" and not self.cancel.cancelled:
                self.result = result
        except BaseException:  # noqa: BLE001 - a failed job is discarded; the foreground path reports failures
            pass
        finally:
            self.done.set()

    @property
    def failed(self) -> bool:
        """Finished without a usable summary (a model error, no API key...), not by a cancel."""
        return self.done.is_set() and self.result is None and not self.cancel.cancelled

    def wait(self, cancel: CancelToken) -> CompactionResult | None:
        """The summary once the thread is done (None if it failed); ``cancel`` ends the wait and the job."""
        while not self.done.wait(_POLL_S):
            if cancel.cancelled:
                self.stop()
                raise Cancelled("Compaction cancelled; nothing was written.")
        return self.result

    def stop(self) -> None:
        """Cancel the job and wait for its thread."""
        self.cancel.cancel()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(_JOIN_S)


class BackgroundCompaction:
    """The session's one background summary job, if any: when to start, commit or drop it.

    It holds no session: each call gets the compactor the session would run now (its store, model,
    fitted settings, hooks and summarizer) and the session's (calibrated) estimator.
    """

    def __init__(self, emit: Callable[[SessionEvent], None]) -> None:
        self._emit = emit
        self._job: SummaryJob | None = None
        self._turn: CancelToken | None = None  # the token of the turn running now (or last)
        self._failed = False  # a job failed: none starts again before the next compaction

    def tend(self, compactor: Compactor, estimator: Estimator, usage: ContextUsage, cancel: CancelToken | None,
             allowed: bool) -> bool:
        """At a turn boundary: True when a finished summary still applies (commit it now). Past the soft
        threshold starts a job when none runs; drops one that no longer applies.

        ``allowed``: automatic compaction may run (on, and not stopped by the loop guard).
        """
        previous, self._turn = self._turn, cancel or self._turn
        if previous is not None and previous.cancelled:
            self.discard()  # a cancelled turn takes the background summary with it, finished or not
        settings = compactor.settings.compaction
        if not allowed or not settings.background:
            self.discard()
            return False
        hard = settings.enabled and usage.tokens > usage.threshold  # (the threshold with the answer room)
        job = self._job
        if job is not None and self._usable(job, compactor, estimator) is None:
            self._failed = self._failed or job.failed
            self.discard()
            job = None
        if job is None and not hard and not self._failed \
                and past_soft_threshold(usage.tokens, _budgets(compactor), settings):
            self._start(compactor, estimator, usage)
        return job is not None and job.done.is_set()

    def run(self, compactor: Compactor, estimator: Estimator, reason: CompactionReason,
            **options: Any) -> CompactionResult | None:
        """``compactor.run(reason, **options)``, committing the job's summary when it still applies."""
        job, self._job = self._job, None
        plan = self._usable(job, compactor, estimator) if job is not None and reason == "threshold" else None
        if job is None or plan is None:
            if job is not None:
                job.stop()
            result = compactor.run(reason, **options)
        else:
            fallback = compactor.model_summary

            def made_ahead(plan: CompactionPlan, instructions: str | None, cancel: CancelToken) -> CompactionResult:
                made = job.wait(cancel)
                if made is None:  # it failed while the compaction waited: ask now, as the foreground does
                    return fallback(plan, instructions, cancel)
                after = estimated_tokens_after(made.summary, plan.kept_messages)
                return replace(made, tokens_before=plan.tokens_before, estimated_tokens_after=after,
                               details={**made.details, "background": True})

            result = compactor.run(reason, planned=(_path(compactor), plan), summary=made_ahead, **options)
        if result is not None:
            self._failed = False
        return result

    def discard(self) -> None:
        """Drop the job, if any (cancelled; nothing was written)."""
        job, self._job = self._job, None
        if job is not None:
            job.stop()

    def close(self) -> None:
        """The session ends: cancel the job and wait for its thread."""
        self.discard()

    # ---- internals -------------------------------------------------------------------------------

    def _usable(self, job: SummaryJob, compactor: Compactor, estimator: Estimator) -> CompactionPlan | None:
        """The job's plan rebased on the path now; None when it no longer applies (the job is then dropped)."""
        if job.cancel.cancelled or job.failed:
            return None
        settings = compactor.settings.compaction
        plan = rebase(job.ahead, _path(compactor), settings, compactor.model.info.model)
        if plan is None:
            return None
        # A tail that grew past the soft threshold while the summary was made would leave the context
        # about as full as it is: a fresh plan (cut later) is worth more. A finished summary that makes
        # it so would be made as big again: no job starts again before the next compaction.
        room = _budgets(compactor).soft_threshold
        if job.result is None:
            return plan if _tokens(plan.kept_messages, estimator) <= room else None
        if estimated_tokens_after(job.result.summary, plan.kept_messages, estimator) <= room:
            return plan
        self._failed = True
        return None

    def _start(self, compactor: Compactor, estimator: Estimator, usage: ContextUsage) -> None:
        settings = compactor.settings.compaction
        ahead = plan_ahead(_path(compactor), settings, compactor.model.info.model)
        if ahead is None or _tokens(ahead.plan.kept_messages, estimator) > _budgets(compactor).soft_threshold:
            return  # nothing to summarize, or a compaction now would not bring the context under it
        # Its own compactor, silent: a retry of the background request is nobody's business at the prompt.
        quiet = replace(compactor, emit=_ignore, allow_fallback=False, hooks=None)
        job = SummaryJob(ahead, lambda plan, cancel: quiet.model_summary(plan, None, cancel), lambda: self._turn)
        self._job = job
        job.start()
        self._emit(Notice(f"Context {usage.percent:.0f}% full: summarizing older messages in the background; "
                          "the summary is written at the next turn.", "info"))


def _budgets(compactor: Compactor) -> Budgets:
    """The budgets the compactor's session holds (its plan's), else those of its settings on its model's window."""
    if compactor.plan is not None:
        return compactor.plan.budgets
    return Budgets.of(compactor.settings.compaction, compactor.model.info.context_window)


def _path(compactor: Compactor) -> list[Entry]:
    """What the compactor plans from: an extension gets the whole branch, as in pi."""
    store = compactor.store
    return store.branch() if compactor.hooks is not None else store.branch_tail()


def _tokens(messages: Sequence[Message], estimate: Estimator) -> int:
    return sum(estimate(m) for m in messages)


def _ignore(event: SessionEvent) -> None:
    """Events of the background compactor (retries) are not shown."""


__all__ = ["THREAD_NAME", "BackgroundCompaction", "SummaryJob"]
