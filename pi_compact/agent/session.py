"""AgentSession: one conversation with one model, its session file, and compaction at the right moments.

Checks, in pi's order and beyond it:
- after every model reply: a context overflow (same model, reply newer than the latest compaction)
  compacts with reason ``overflow``, leaves the failed reply out of the rebuilt live context (it stays
  in the file) and retries once; a second overflow in the same prompt ends with an error and no
  retry, and is not compacted again before the next prompt. A *silent* overflow (the provider answered
  although the prompt exceeded the window) keeps its answer: compaction, no retry;
- between tool-loop turns (beyond pi, #5512/#6879): past the threshold, compact before the next model
  call and carry on with the task (pi would stop idle, #4274);
- after the run and before a new prompt: threshold (or overflow left from an earlier run).
All of them, and manual ``/compact``, go through the one ``Compactor`` pipeline. No UI imports; the
UI reads the session through the read-only properties below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pi_compact.agent.aftercare import after_compaction
from pi_compact.agent.approval import ApprovalGate
from pi_compact.agent.background import BackgroundCompaction
from pi_compact.agent.compactor import CompactionHooks, Compactor, nothing_to_compact
from pi_compact.agent.diagnosis import diagnose, stop_notice
from pi_compact.agent.events import (
    AgentEnd,
    AgentStart,
    CompactionEnd,
    CompactionReason,
    MessageEnd,
    MessageStart,
    Notice,
    SessionEvent,
)
from pi_compact.agent.guard import LoopGuard
from pi_compact.agent.live_context import LiveContext, reply_key
from pi_compact.agent.loop import run_tool_calls, stream_reply, tool_calls
from pi_compact.agent.notices import OVERFLOW_GIVE_UP, window_hint
from pi_compact.agent.opening import Opening, record_model
from pi_compact.agent.request import build_request, failed_reply
from pi_compact.agent.summary_model import Summarizer, Summarizers
from pi_compact.agent.tools import Tool, ToolContext
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.compaction.threshold import fit_to_window
from pi_compact.compaction.tokens import ContextUsage, Estimator, estimator_for
from pi_compact.errors import PiCompactError, SessionError
from pi_compact.llm.overflow import is_overflow_of
from pi_compact.llm.protocol import ChatModel
from pi_compact.messages import Message
from pi_compact.session.pins import PinTracker
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings


class AgentSession:
    """Runs prompts through the tool loop, persisting every message and compacting when needed."""

    def __init__(
        self,
        *,
        store: SessionStore,
        model: ChatModel,
        settings: Settings,
        tools: Sequence[Tool],
        system_prompt: str,
        cwd: Path,
        emit: Callable[[SessionEvent], None],
        hooks: CompactionHooks | None = None,
        auto_compact: bool = True,
        now_ms: Callable[[], int] = now_ms,
        make_summarizer: Callable[[str, Settings], ChatModel] | None = None,
    ) -> None:
        self._store = store
        self._model = model
        self._settings = settings
        self._estimator = estimator_for(settings.compaction.token_estimator)
        self._tools = list(tools)
        self._system_prompt = system_prompt
        self._cwd = cwd
        self._auto_compact = auto_compact
        self._hooks = hooks
        self._emit = emit
        self._now = now_ms
        self._context = LiveContext(store, calibrate=settings.compaction.token_estimator == "auto")
        self._gave_up_on: Mapping[str, Any] | None = None  # the overflow reply recovery gave up on
        self._guard = LoopGuard()
        self._background = BackgroundCompaction(self, emit)  # compaction.background: summaries made ahead
        self._compactions = store.compaction_count()
        self._opening = Opening(store, due=not self._context.messages, now_ms=now_ms)
        self._pins = PinTracker()  # the pins of the current branch, sent after the system prompt
        self.approval: ApprovalGate | None = None  # the approval mode's gate; None runs every call (pi's way)
        self._summarizers = Summarizers(make_summarizer)  # the ``compaction.model`` named by the settings

    # ---- what the UI reads -----------------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        return self._store

    @property
    def model(self) -> ChatModel:
        return self._model

    @property
    def settings(self) -> Settings:
        """The settings as given (see ``fitted_settings`` for the budgets in force)."""
        return self._settings

    @property
    def estimator(self) -> Estimator:
        """The session's one token estimator (``compaction.tokenEstimator``; ``auto`` calibrated by usage)."""
        return self._context.estimator(self._estimator, reply_key(self._model))

    @property
    def messages(self) -> Sequence[Message]:
        """The live context: what the next request carries."""
        return self._context.messages

    @property
    def compactions(self) -> int:
        """Compaction entries in the file, this run's included."""
        return self._compactions

    @property
    def auto_compact(self) -> bool:
        return self._auto_compact

    @property
    def hooks(self) -> CompactionHooks | None:
        return self._hooks

    def fitted_settings(self) -> Settings:
        """The settings in force: compaction budgets fitted to the model's window (``fit_to_window``).

        ``settings`` stays as given, so a model switch or a reload is fitted afresh; no threshold is
        ever negative. A model still resolving is not waited for (the terminal reads this meanwhile).
        """
        if not self._model.ready:
            return self._settings
        return fit_to_window(self._settings, self._model.info.context_window)[0]

    def context_usage(self) -> ContextUsage:
        """The last fresh provider usage plus estimates of what follows it (else all estimated)."""
        window = self._model.info.context_window
        threshold = window - self.fitted_settings().compaction.reserve_tokens
        return self._context.usage(self._estimator, window, threshold, reply_key(self._model))

    def reload_context(self) -> None:
        """Rebuild the live context from the session file (after anything that changed the branch)."""
        self._context.reload(self._store)

    def close(self) -> None:
        """Done with this session: a background summary is dropped, and other programs may write its file again."""
        self._background.close()
        self._store.close()

    # ---- compaction ----------------------------------------------------------------------------

    def compact(self, instructions: str | None = None, cancel: CancelToken | None = None,
                reason: CompactionReason = "manual", will_retry: bool = False) -> CompactionResult | None:
        """Compact now (``/compact``); the live context is rebuilt from the file right after."""
        percent = self.context_usage().percent if reason == "threshold" else None
        compactor = Compactor(self._store, self._model, self.fitted_settings(), self._emit, self._hooks,
                              now_ms=self._now, diagnose=self.diagnose, guard=self._guard,
                              summarizer=self.summarizer())
        result = self._background.run(compactor, reason, instructions=instructions, cancel=cancel,
                                      will_retry=will_retry, context_percent=percent)
        if result is not None:
            self._compactions += 1
            self.reload_context()
            pins = self._pins.current(self._store.customs_on_path, self._store.leaf_id)
            for warning in after_compaction(self.context_usage(), self.messages, self.estimator,
                                            self.fitted_settings().compaction, pins, self._guard,
                                            automatic=reason != "manual", tokens_before=result.tokens_before):
                self._emit(Notice(warning, "warning"))
        self._consult_guard()
        return result

    def summarizer(self) -> Summarizer | None:
        """The ``compaction.model`` that writes summaries (None: the chat model)."""
        return self._summarizers.for_settings(self._settings)

    def diagnose(self) -> str:
        """The biggest consumers of the context, named with sizes, and what to do (the loop guard's words)."""
        return diagnose(self._system_prompt, self._store.branch(), self.estimator, self.fitted_settings().compaction,
                        self._model.info.context_window)

    def _consult_guard(self) -> bool:
        """False once the loop guard has stopped automatic compaction (saying why, once)."""
        if self._guard.should_stop:
            self._guard.stop()
            self._emit(Notice(stop_notice(self.diagnose()), "warning"))
        return not self._guard.stopped

    def _threshold_exceeded(self, cancel: CancelToken | None = None) -> bool:
        usage = self.context_usage()
        self._guard.observe(len(self.messages), usage.tokens, usage.threshold)
        return self._background.due(usage, cancel, self._auto_compact and self._consult_guard())

    def _is_overflow(self, message: Mapping[str, Any]) -> bool:
        return is_overflow_of(message, self._model.info)

    def check_before_prompt(self, cancel: CancelToken | None = None) -> None:
        """pi's pre-prompt check: compact if the last fresh reply overflowed or the threshold is passed.

        An overflow the previous run already gave up on is not compacted again: one compact-and-retry
        per overflow, and the user was told.
        """
        last = self._context.last_fresh_reply()
        if last is not None and self._auto_compact and self._is_overflow(last) and last != self._gave_up_on:
            if self.compact(cancel=cancel, reason="overflow") is not None:
                self._context.drop_failed_reply(last)
        elif self._threshold_exceeded(cancel):
            self.compact(cancel=cancel, reason="threshold")

    # ---- prompting -----------------------------------------------------------------------------

    def add_message(self, message: Message) -> None:
        """Record ``message`` in the file and the live context (also one made outside a turn: ``!cmd``)."""
        self._store.append_message(message, self._now())
        self._context.messages.append(message)

    def prompt(self, text: str, cancel: CancelToken | None = None) -> dict[str, Any] | None:
        """Run one user prompt to completion; returns the final assistant message."""
        token = cancel or CancelToken()
        self.check_before_prompt(token)
        if token.cancelled:
            return None
        self._emit(AgentStart())
        user = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": self._now()}
        self._emit(MessageStart("user"))
        self._emit(MessageEnd(user))
        self._opening.record(self._model)
        self.add_message(user)
        try:
            final = self._run(token)
        except SessionError as exc:
            # A write failed (the store has said so in one sentence): recording that as a failed reply
            # would be one more write to the same file.
            self._emit(AgentEnd(str(exc)))
            raise
        except PiCompactError as exc:
            # Raised before a request was sent (e.g. no API key, unknown window): record it as pi records
            # a failed reply, so the transcript stays well-formed and a retry does not stack prompts.
            final = failed_reply(str(exc), self._now())
            self._emit(MessageStart("assistant"))
            self._emit(MessageEnd(final))
            self.add_message(final)
        error = final.get("errorMessage") if final and final.get("stopReason") in ("error", "aborted") else None
        self._emit(AgentEnd(str(error) if error else None))
        # An error reply is checked too (pi #1834: the estimate keeps compaction possible when a provider
        # keeps failing); an overflow was already handled inside the run.
        # A cancel stops the whole turn: no compaction starts after it (the token stays cancelled).
        if final is not None and final.get("stopReason") != "aborted" and not token.cancelled \
                and not self._is_overflow(final) and self._threshold_exceeded(token):
            self.compact(cancel=token, reason="threshold")
        return final

    def _run(self, cancel: CancelToken) -> dict[str, Any] | None:
        overflow_retried = False
        while True:  # as long as the model calls tools (no cap, as in pi: Ctrl-C stops it)
            pins = self._pins.current(self._store.customs_on_path, self._store.leaf_id)
            reply = stream_reply(self._model, build_request(self._system_prompt, self.messages, self._tools, pins),
                                 cancel, self._emit)
            self.add_message(reply)
            stop = reply.get("stopReason")
            if stop == "aborted" or cancel.cancelled:
                return reply
            if self._is_overflow(reply) and self._auto_compact:
                if stop == "stop":
                    # A silent overflow (the provider answered past its window): the answer is good, so
                    # keep it and compact for the next prompt; retrying would throw it away (pi 0.80.2).
                    self.compact(cancel=cancel, reason="overflow")
                    return reply
                if overflow_retried:
                    self._gave_up_on = reply
                    self._emit(CompactionEnd("overflow", None, error_message=OVERFLOW_GIVE_UP))
                    return reply
                overflow_retried = True
                if self.compact(cancel=cancel, reason="overflow", will_retry=True) is None:
                    budgets = self.fitted_settings().compaction
                    if not cancel.cancelled and nothing_to_compact(self._store.branch_tail(), budgets):
                        self._emit(Notice(window_hint(self._model.info), "warning"))
                    return reply
                self._context.drop_failed_reply(reply)
                continue
            if stop == "error" or not tool_calls(reply):
                return reply
            approve = self.approval.allows if self.approval is not None else None
            if not run_tool_calls(reply, self._tools, ToolContext(self._cwd, cancel), self._emit, self.add_message,
                                  approve):
                return reply
            if self._threshold_exceeded(cancel):
                # Beyond pi: compact between tool turns, then continue the task with summary + tail.
                self.compact(cancel=cancel, reason="threshold")
                if cancel.cancelled:
                    return reply

    # ---- settings ------------------------------------------------------------------------------

    def set_model(self, model: ChatModel, cancel: CancelToken | None = None) -> None:
        """Switch models; compact first when the context would not fit the new window's threshold."""
        self._opening.record(self._model)  # a new session records the model it started with first, as pi does
        self._model = model
        record_model(self._store, model.info, self._now())
        if self._threshold_exceeded(cancel):
            self.compact(cancel=cancel, reason="threshold")

    def set_settings(self, settings: Settings) -> None:
        self._settings = settings
        self._summarizers.forget()
        self._estimator = estimator_for(settings.compaction.token_estimator)
        self._context.calibrate = settings.compaction.token_estimator == "auto"

    def set_auto_compaction(self, enabled: bool) -> None:
        self._auto_compact = enabled
        self._guard.reset()
        self._settings = replace(self._settings, compaction=replace(self._settings.compaction, enabled=enabled))


# Named here too, for code that imported them from this module.
__all__ = ["OVERFLOW_GIVE_UP", "AgentSession", "ContextUsage", "failed_reply", "window_hint"]
