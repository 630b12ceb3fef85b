"""Compaction in the background (``compaction.background``): a summary made ahead, committed at a turn boundary.

Contract:
- ``BackgroundCompaction.due`` replaces the threshold test at every turn boundary (before a prompt,
  between tool turns, after a run, after a model switch). Past the soft threshold it plans the
  compaction a foreground one would make now and starts ``SummaryJob``: a daemon thread that only
  calls the model (through ``Compactor.model_summary``, retries unreported). It returns True, "compact
  now", when the job has finished and its plan still holds (``compaction.ahead.rebase``), or when the
  hard threshold is passed (the compaction then waits for a running job whose plan holds: less than
  asking again).
- The commit is ``run``: the one ``Compactor`` pipeline on the session's thread, with the job's plan
  (the same cut and summarized entries; entries added meanwhile in the kept tail) and its summary,
  so the same events (one start, one end), hooks, no-gain check and entry shape as in the foreground;
  ``details.background`` is true. A job whose plan no longer holds (a compaction, ``/tree``, other
  budgets or model), that failed, or whose kept tail grew past the soft threshold is discarded
  silently and the normal path runs. After a failure, or a summary that would itself leave the
  context past the soft threshold, no job starts before the next compaction (no summary is paid for
  over and over).
- Nothing here writes to the session file: a cancel of the turn (the job watches the token of the
  turn now running), ``close`` (exit, ``/new``) or a discard leave it byte-identical. ``close``
  cancels the job and waits for its thread.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from pi_compact.agent.compactor import CompactionHooks, Compactor
from pi_compact.agent.events import CompactionReason, Notice, SessionEvent
from pi_compact.agent.summary_model import Summarizer
from pi_compact.cancel import CancelToken
from pi_compact.compaction.ahead import Ahead, past_soft_threshold, plan_ahead, rebase, soft_threshold
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.summarize import CompactionResult, estimated_tokens_after
from pi_compact.compaction.threshold import should_compact
from pi_compact.compaction.tokens import ContextUsage, Estimator
from pi_compact.errors import Cancelled
from pi_compact.llm.protocol import ChatModel
from pi_compact.messages import Message
from pi_compact.session.entries import Entry
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings

THREAD_NAME = "pi-background-summary"
_POLL_S = 0.05
_JOIN_S = 5.0  # a cancelled stream stops within ~0.1 s; this only bounds a stuck provider library


class SessionView(Protocol):
    """What the background compaction reads of its session (``AgentSession`` has it)."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def model(self) -> ChatModel: ...

    @property
    def hooks(self) -> CompactionHooks | None: ...

    def fitted_settings(self) -> Settings: ...

    def summarizer(self) -> Summarizer | None: ...

    @property
    def estimator(self) -> Estimator: ...  # the session's (calibrated) estimator: sizes are in its units


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
    """The session's one background summary job, if any, and when to start, commit or drop it."""

    def __init__(self, session: SessionView, emit: Callable[[SessionEvent], None]) -> None:
        # Held weakly: a session that owned a strong cycle with this object would outlive its last
        # reference until a garbage collection, and its store's lock (file and flock) with it.
        self._session_ref = weakref.ref(session)
        self._emit = emit
        self._job: SummaryJob | None = None
        self._turn: CancelToken | None = None  # the token of the turn running now (or last)
        self._failed = False  # a job failed: none starts again before the next compaction

    @property
    def _session(self) -> SessionView:
        session = self._session_ref()
        assert session is not None, "the session was dropped"
        return session

    def due(self, usage: ContextUsage, cancel: CancelToken | None, automatic: bool) -> bool:
        """Should a threshold compaction run now? Past the soft threshold, starts a job when none runs.

        ``automatic``: automatic compaction is allowed (on, and not stopped by the loop guard).
        """
        previous, self._turn = self._turn, cancel or self._turn
        if previous is not None and previous.cancelled:
            self.discard()  # a cancelled turn takes the background summary with it, finished or not
        settings = self._session.fitted_settings().compaction
        if not automatic or not settings.background:
            self.discard()
            return automatic and should_compact(usage.tokens, usage.context_window, settings)
        hard = should_compact(usage.tokens, usage.context_window, settings)
        job = self._job
        if job is not None and self._usable(job) is None:
            self._failed = self._failed or job.failed
            self.discard()
            job = None
        if job is not None and (hard or job.done.is_set()):
            return True  # commit it (waiting for it first at the hard threshold)
        if job is None and not hard and not self._failed \
                and past_soft_threshold(usage.tokens, usage.context_window, settings):
            self._start(usage)
        return hard

    def run(self, compactor: Compactor, reason: CompactionReason, **options: Any) -> CompactionResult | None:
        """``compactor.run(reason, **options)``, committing the job's summary when it still applies."""
        job, self._job = self._job, None
        plan = self._usable(job) if job is not None and reason == "threshold" else None
        if job is None or plan is None:
            if job is not None:
                job.stop()
            result = compactor.run(reason, **options)
        else:
            branch = self._path()
            fallback = compactor.model_summary

            def made_ahead(plan: CompactionPlan, instructions: str | None, cancel: CancelToken) -> CompactionResult:
                made = job.wait(cancel)
                if made is None:  # it failed while the compaction waited: ask now, as the foreground does
                    return fallback(plan, instructions, cancel)
                after = estimated_tokens_after(made.summary, plan.kept_messages)
                return replace(made, tokens_before=plan.tokens_before, estimated_tokens_after=after,
                               details={**made.details, "background": True})

            result = compactor.run(reason, planned=(branch, plan), summary=made_ahead, **options)
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

    def _path(self) -> list[Entry]:
        # What the compactor plans from: an extension gets the whole branch, as in pi.
        store = self._session.store
        return store.branch() if self._session.hooks is not None else store.branch_tail()

    def _usable(self, job: SummaryJob) -> CompactionPlan | None:
        """The job's plan rebased on the path now; None when it no longer applies (the job is then dropped)."""
        if job.cancel.cancelled or job.failed:
            return None
        settings = self._session.fitted_settings()
        plan = rebase(job.ahead, self._path(), settings.compaction, self._session.model.info.model)
        if plan is None:
            return None
        # A tail that grew past the soft threshold while the summary was made would leave the context
        # about as full as it is: a fresh plan (cut later) is worth more. A finished summary that makes
        # it so would be made as big again: no job starts again before the next compaction.
        room = self._soft(settings)
        if job.result is None:
            return plan if _tokens(plan.kept_messages, self._session.estimator) <= room else None
        if estimated_tokens_after(job.result.summary, plan.kept_messages, self._session.estimator) <= room:
            return plan
        self._failed = True
        return None

    def _soft(self, settings: Settings) -> int:
        return soft_threshold(self._session.model.info.context_window, settings.compaction)

    def _start(self, usage: ContextUsage) -> None:
        session = self._session
        settings = session.fitted_settings()
        ahead = plan_ahead(self._path(), settings.compaction, session.model.info.model)
        if ahead is None or _tokens(ahead.plan.kept_messages, session.estimator) > self._soft(settings):
            return  # nothing to summarize, or a compaction now would not bring the context under it
        # Its own compactor, silent: a retry of the background request is nobody's business at the prompt.
        compactor = Compactor(session.store, session.model, settings, _ignore, allow_fallback=False,
                              summarizer=session.summarizer())
        job = SummaryJob(ahead, lambda plan, cancel: compactor.model_summary(plan, None, cancel), lambda: self._turn)
        self._job = job
        job.start()
        self._emit(Notice(f"Context {usage.percent:.0f}% full: summarizing older messages in the background; "
                          "the summary is written at the next turn.", "info"))


def _tokens(messages: Sequence[Message], estimate: Estimator) -> int:
    return sum(estimate(m) for m in messages)


def _ignore(event: SessionEvent) -> None:
    """Events of the background compactor (retries) are not shown."""


__all__ = ["THREAD_NAME", "BackgroundCompaction", "SessionView", "SummaryJob"]
