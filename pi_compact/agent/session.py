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
All of them, and manual ``/compact``, go through the one ``Compactor`` pipeline. No UI imports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pi_compact.agent.compactor import CompactionHooks, Compactor, nothing_to_compact
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
from pi_compact.agent.loop import run_tool_calls, stream_reply, tool_calls
from pi_compact.agent.tools import Tool, ToolContext
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.compaction.tokens import (
    assistant_usage,
    calculate_context_tokens,
    estimator_for,
    should_compact,
)
from pi_compact.errors import PiCompactError, SessionError
from pi_compact.llm.overflow import is_context_overflow
from pi_compact.llm.protocol import CancelToken, ChatModel, ChatRequest, ModelInfo, ToolSpec, empty_usage
from pi_compact.llm.resolve import SETTINGS_PATH_HINT
from pi_compact.messages import Message, convert_to_llm
from pi_compact.session.context import project_path
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings, model_key
from pi_compact.settings_report import fit_to_window

OVERFLOW_GIVE_UP = (
    "Context overflow recovery failed after one compact-and-retry attempt. Reduce the context "
    "(e.g. /compact with instructions, or start a /new session) or switch to a model with a larger window."
)


@dataclass(frozen=True)
class ContextUsage:
    """How full the context is now, for the status line and ``/context``."""

    tokens: int
    context_window: int
    threshold: int
    from_usage: bool  # anchored on a provider-reported usage (else all estimated)

    @property
    def percent(self) -> float:
        return self.tokens / self.context_window * 100 if self.context_window else 0.0

    @property
    def tokens_left(self) -> int:
        """Tokens before auto-compaction triggers."""
        return max(0, self.threshold - self.tokens)


def window_hint(info: ModelInfo) -> str:
    """Said when the provider overflows with nothing left to compact: our window is likely too big."""
    return (
        f"The provider reports a context overflow and there is nothing to compact: the context window known "
        f"for {info.model} is {info.context_window:,} tokens; if the provider's real limit is smaller, set "
        f"{model_key(info.model)}.contextWindow in {SETTINGS_PATH_HINT} or pass --context-window."
    )


def failed_reply(error: str, now_ms: int) -> dict[str, Any]:
    """An assistant message for a turn that failed before the model was reached."""
    return {
        "role": "assistant", "content": [], "api": "openai-completions", "provider": "", "model": "",
        "usage": empty_usage(), "stopReason": "error", "errorMessage": error, "timestamp": now_ms,
    }


def _now_ms() -> int:
    return int(time.time() * 1000)


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
        now_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.store = store
        self.model = model
        self.settings = settings
        self.tools = list(tools)
        self.system_prompt = system_prompt
        self.cwd = cwd
        self.auto_compact = auto_compact
        self.hooks = hooks
        self._emit = emit
        self._now = now_ms
        self.messages: list[Message] = []
        self._fresh_from = 0  # messages before this index predate the latest compaction
        self._gave_up_on: Mapping[str, Any] | None = None  # the overflow reply recovery gave up on
        self.compactions = store.compaction_count()
        self._reload_context()
        # pi opens a session without messages with its model and thinking level (see _record_opening).
        self._opening_due = not self.messages

    def fitted_settings(self) -> Settings:
        """The settings in force: compaction budgets fitted to the model's window (``fit_to_window``).

        ``settings`` stays as given, so a model switch or a reload is fitted afresh; no threshold is
        ever negative. A model still resolving is not waited for (the terminal reads this meanwhile).
        """
        if not getattr(self.model, "ready", True):
            return self.settings
        return fit_to_window(self.settings, self.model.info.context_window)[0]

    # ---- context -------------------------------------------------------------------------------

    def _reload_context(self) -> None:
        branch = self.store.branch_tail()  # all the context is made of: older entries stay unread
        self.messages = list(project_path(branch).messages)
        latest = max((i for i, e in enumerate(branch) if e.get("type") == "compaction"), default=None)
        # The summary and the kept tail carry usage from before the latest compaction: stale (pi #1860).
        # Messages written after it (a resumed session) are fresh and must be checked.
        after = len(project_path(branch[latest + 1 :]).messages) if latest is not None else len(self.messages)
        self._fresh_from = len(self.messages) - after

    def context_usage(self) -> ContextUsage:
        """The last fresh provider usage plus estimates of what follows it (else all estimated)."""
        estimate = estimator_for(self.settings.compaction.token_estimator)
        window = self.model.info.context_window
        threshold = window - self.fitted_settings().compaction.reserve_tokens
        for index in range(len(self.messages) - 1, self._fresh_from - 1, -1):
            usage = assistant_usage(self.messages[index])
            if usage is not None and calculate_context_tokens(usage) > 0:
                trailing = sum(estimate(m) for m in self.messages[index + 1 :])
                return ContextUsage(calculate_context_tokens(usage) + trailing, window, threshold, True)
        return ContextUsage(sum(estimate(m) for m in self.messages), window, threshold, False)

    def _record_opening(self) -> None:
        """pi's first entries of a new session, once: the model in use, then the thinking level.

        Recorded when first needed (the first prompt or model switch) rather than at start-up, which
        must not wait for the model to resolve; like every entry they reach the file with the first
        answer. Without a usable model pi records only the thinking level, and so do we.
        """
        if not self._opening_due:
            return
        self._opening_due = False
        try:
            info = self.model.info
        except PiCompactError:
            info = None  # the prompt itself reports why the model is unusable
        if info is not None:
            self._record_model(info)
        # No model is ever asked to think (no reasoning effort is sent): pi's level "off".
        self.store.append({"type": "thinking_level_change", "thinkingLevel": "off"}, self._now())

    def _record_model(self, info: ModelInfo) -> None:
        # pi's provider name and the id without the litellm prefix, as in assistant messages.
        self.store.append({"type": "model_change", "provider": info.provider, "modelId": info.model_id}, self._now())

    def _append(self, message: Message) -> None:
        self.store.append_message(message, self._now())
        self.messages.append(message)

    # ---- compaction ----------------------------------------------------------------------------

    def _compactor(self) -> Compactor:
        return Compactor(self.store, self.model, self.fitted_settings(), self._emit, self.hooks, now_ms=self._now)

    def compact(
        self, instructions: str | None = None, cancel: CancelToken | None = None,
        reason: CompactionReason = "manual", will_retry: bool = False,
    ) -> CompactionResult | None:
        """Compact now (``/compact``); the live context is rebuilt from the file right after."""
        percent = self.context_usage().percent if reason == "threshold" else None
        result = self._compactor().run(reason, instructions=instructions, cancel=cancel,
                                       will_retry=will_retry, context_percent=percent)
        if result is not None:
            self.compactions += 1
            self._reload_context()
            self._check_progress()
        return result

    def _check_progress(self) -> None:
        """After a compaction: say so, naming the biggest kept message, when it could not free enough.

        Without this the user only sees compaction after compaction (peers' "thrash" complaints).
        Further automatic attempts stay cheap: with nothing new before the big kept message, the plan
        is empty and no summarizer call is made.
        """
        usage = self.context_usage()
        always = replace(self.fitted_settings().compaction, enabled=True)
        if not should_compact(usage.tokens, usage.context_window, always):
            return
        biggest = max(self.messages, key=estimator_for(self.settings.compaction.token_estimator), default=None)
        culprit = ""
        if biggest is not None:
            size = estimator_for(self.settings.compaction.token_estimator)(biggest)
            name = f" of {biggest.get('toolName')}" if biggest.get("toolName") else ""
            culprit = f" The largest kept message is a {biggest.get('role')}{name} of about {size:,} tokens."
        self._emit(Notice(
            f"Compaction could not bring the context under the auto-compaction threshold "
            f"({usage.tokens:,} of {usage.threshold:,} tokens after compacting).{culprit} "
            "Lower compaction.keepRecentTokens or use a model with a larger window.",
            "warning",
        ))

    def _threshold_exceeded(self) -> bool:
        if not self.auto_compact:
            return False
        usage = self.context_usage()
        return should_compact(usage.tokens, usage.context_window, self.fitted_settings().compaction)

    def _is_overflow(self, message: Mapping[str, Any]) -> bool:
        if message.get("model") is not None and not self.model.info.is_same_model(
            message.get("provider"), message.get("model")
        ):
            return False  # an error from another model says nothing about this one's window
        return is_context_overflow(message, self.model.info.context_window)

    def check_before_prompt(self, cancel: CancelToken | None = None) -> None:
        """pi's pre-prompt check: compact if the last fresh reply overflowed or the threshold is passed.

        An overflow the previous run already gave up on is not compacted again: one compact-and-retry
        per overflow, and the user was told.
        """
        last = next((m for m in reversed(self.messages[self._fresh_from :]) if m.get("role") == "assistant"), None)
        if last is not None and self.auto_compact and self._is_overflow(last) and last != self._gave_up_on:
            if self.compact(cancel=cancel, reason="overflow") is not None:
                self._drop_failed_reply(last)
        elif self._threshold_exceeded():
            self.compact(cancel=cancel, reason="threshold")

    def _drop_failed_reply(self, reply: Mapping[str, Any]) -> None:
        """After an overflow compaction, leave the overflowed reply out of the rebuilt live context.

        It is the last entry of the file, so it lands in the kept tail (pi drops only ``error`` tails,
        delta §9.4). It is no conversation: an ``error`` or empty ``length`` reply is skipped on the
        wire, but in the live context it would sit between the prompt and the retried answer and
        shift what counts as fresh usage. It stays in the file.
        """
        if reply.get("stopReason") != "stop" and self.messages and self.messages[-1] == reply:
            self.messages.pop()
            self._fresh_from = min(self._fresh_from, len(self.messages))  # what follows is fresh

    # ---- prompting -----------------------------------------------------------------------------

    def _request(self) -> ChatRequest:
        specs = [ToolSpec(t.name, t.description, t.parameters) for t in self.tools]
        return ChatRequest(self.system_prompt, convert_to_llm(self.messages), specs, None)

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
        self._record_opening()
        self._append(user)
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
            self._append(final)
        error = final.get("errorMessage") if final and final.get("stopReason") in ("error", "aborted") else None
        self._emit(AgentEnd(str(error) if error else None))
        # An error reply is checked too (pi #1834: the estimate keeps compaction possible when a provider
        # keeps failing); an overflow was already handled inside the run.
        # A cancel stops the whole turn: no compaction starts after it (the token stays cancelled).
        if final is not None and final.get("stopReason") != "aborted" and not token.cancelled \
                and not self._is_overflow(final) and self._threshold_exceeded():
            self.compact(cancel=token, reason="threshold")
        return final

    def _run(self, cancel: CancelToken) -> dict[str, Any] | None:
        overflow_retried = False
        while True:  # as long as the model calls tools (no cap, as in pi: Ctrl-C stops it)
            reply = stream_reply(self.model, self._request(), cancel, self._emit)
            self._append(reply)
            stop = reply.get("stopReason")
            if stop == "aborted" or cancel.cancelled:
                return reply
            if self._is_overflow(reply) and self.auto_compact:
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
                    if not cancel.cancelled and nothing_to_compact(self.store.branch_tail(), budgets):
                        self._emit(Notice(window_hint(self.model.info), "warning"))
                    return reply
                self._drop_failed_reply(reply)
                continue
            if stop == "error":
                return reply
            if not tool_calls(reply):
                return reply
            ctx = ToolContext(self.cwd, cancel.event)
            if not run_tool_calls(reply, self.tools, ctx, self._emit, self._append):
                return reply
            if self._threshold_exceeded():
                # Beyond pi: compact between tool turns, then continue the task with summary + tail.
                self.compact(cancel=cancel, reason="threshold")
                if cancel.cancelled:
                    return reply

    # ---- settings ------------------------------------------------------------------------------

    def set_model(self, model: ChatModel, cancel: CancelToken | None = None) -> None:
        """Switch models; compact first when the context would not fit the new window's threshold."""
        self._record_opening()  # a new session records the model it started with first, as pi does
        self.model = model
        self._record_model(model.info)
        if self._threshold_exceeded():
            self.compact(cancel=cancel, reason="threshold")

    def set_settings(self, settings: Settings) -> None:
        self.settings = settings

    def set_auto_compaction(self, enabled: bool) -> None:
        self.auto_compact = enabled
        self.settings = replace(self.settings, compaction=replace(self.settings.compaction, enabled=enabled))
