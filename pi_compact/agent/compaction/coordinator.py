"""A session's compactions: it measures at each automatic site, asks ``triggers.decide``, runs what was
chosen (or ``/compact``) and keeps what lies between sites: the loop guard, the summary made ahead, the
overflow given up on. The session's sites only act on the answer: retry, keep it, or go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from pi_compact.agent.compaction.background import BackgroundCompaction
from pi_compact.agent.compaction.clearing import cleared_notice, pinned_results
from pi_compact.agent.compaction.guard import LoopGuard, after_compaction, diagnose, stop_notice
from pi_compact.agent.compaction.live_context import LiveContext
from pi_compact.agent.compaction.navigator import Navigator, TreeHooks
from pi_compact.agent.compaction.pipeline import CompactionHooks, Compactor
from pi_compact.agent.compaction.prefix_cost import planned_cut
from pi_compact.agent.compaction.reasons import OVERFLOW_GIVE_UP, words
from pi_compact.agent.compaction.summarizer import Summarizers
from pi_compact.agent.compaction.triggers import Point, decide
from pi_compact.agent.events import CompactionEnd, CompactionReason, Notice, SessionEvent
from pi_compact.agent.opening import ThinkingLevel
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.cancel import CancelToken
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.llm.overflow import is_overflow_of
from pi_compact.llm.protocol import ChatModel, ChatRequest
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings

if TYPE_CHECKING:
    from pi_compact.agent.request import Requests


class Compactions:
    """One session's compactions: each runs through the pipeline (or commits a summary made ahead) and
    rebuilds the live context; between them the loop guard, the background job and the overflow that
    recovery gave up on are kept here. ``model`` and ``settings`` (fitted) are the session's at each call.
    """

    def __init__(
        self, store: SessionStore, context: LiveContext, requests: Requests, emit: Callable[[SessionEvent], None], *,
        hooks: CompactionHooks | None, now_ms: Callable[[], int], system_prompt: str, enabled: bool,
        make_summarizer: Callable[[str, Settings], ChatModel] | None,
    ) -> None:
        self._store, self._context, self._emit = store, context, emit
        self._pins, self._requests = requests.pins, requests  # the branch's pins; the last chat request
        self._hooks, self._now, self._system_prompt = hooks, now_ms, system_prompt
        self.enabled = enabled  # automatic compaction (``/autocompact``, ``--no-auto-compact``)
        self.count = store.compaction_count()  # compaction entries in the file, this run's included
        self.guard = LoopGuard()
        self.background = BackgroundCompaction(emit)  # compaction.background: summaries made ahead
        self.summarizers = Summarizers(make_summarizer)  # the ``compaction.model`` named by the settings
        self.gave_up_on: Mapping[str, Any] | None = None  # the overflow reply recovery gave up on
        self.thinking: ThinkingLevel | None = None  # the session's level: summaries reason at it (pi 0.73)

    def run(self, model: ChatModel, settings: Settings, reason: CompactionReason, *, instructions: str | None = None,
            cancel: CancelToken | None = None, will_retry: bool = False, keep: int | None = None,
            ) -> CompactionResult | None:
        """Compact now for ``reason``; after a written one, the warnings it calls for (``after_compaction``).

        ``keep`` (``/compact --keep N``) keeps about N recent tokens instead of ``keepRecentTokens``, this once."""
        if keep is not None:
            settings = replace(settings, compaction=replace(settings.compaction, keep_recent_tokens=keep))
        percent = self._context.usage_for(model, settings.compaction).percent if words(reason).shows_percent else None
        result = self.background.run(self._compactor(model, settings), self._context.estimator_of(model), reason,
                                     instructions=instructions, cancel=cancel, will_retry=will_retry,
                                     context_percent=percent)
        if result is not None:
            self.count += 1
            self._context.reload(self._store)
            pins = self._pins.current(self._store.customs_on_path, self._store.leaf_id)
            for warning in after_compaction(self._context.usage_for(model, settings.compaction), self._context.messages,
                                            self._context.estimator_of(model), settings.compaction, pins, self.guard,
                                            automatic=words(reason).automatic, tokens_before=result.tokens_before,
                                            kept_over_budget=bool(result.details.get("keptOverBudget"))):
                self._emit(Notice(warning, "warning"))
        self._consult_guard(model, settings)
        return result

    def compact_if_due(self, point: Point, model: ChatModel, settings: Settings, cancel: CancelToken | None,
                       reply: Mapping[str, Any] | None = None) -> bool:
        """Compact at an automatic site when ``decide`` says so; False when it did not."""
        reason = self.due(point, model, settings, cancel=cancel, reply=reply)
        if reason is not None:
            self.run(model, settings, reason, cancel=cancel)
        return reason is not None

    def before_prompt(self, model: ChatModel, settings: Settings, cancel: CancelToken | None) -> None:
        """pi's pre-prompt check: the last fresh reply's overflow (unless given up on), else the threshold."""
        last = self._context.last_fresh_reply()
        given_up = last is not None and last == self.gave_up_on
        reason = self.due("before_prompt", model, settings, cancel=cancel, reply=last, given_up=given_up)
        if reason is not None and self.run(model, settings, reason, cancel=cancel) is not None \
                and reason == "overflow" and last is not None:
            self._context.drop_failed_reply(last)

    def after_reply(self, model: ChatModel, settings: Settings, reply: Mapping[str, Any], cancel: CancelToken,
                    retried: bool) -> Literal["retry", "done"] | None:
        """After a model reply: an overflow compacts, then ``retry`` once (the failed reply left out of the
        live context); a silent one keeps its answer (``done``, pi 0.80.2); an overflow right after its
        retry gives up and says so (``done``). None: no overflow to act on."""
        silent = reply.get("stopReason") == "stop"
        overflowed = is_overflow_of(reply, model.info)
        if overflowed:  # what the server counted corrects the estimates the compaction and retry plan with
            self._context.prove(reply, model)
        elif reply.get("stopReason") in ("stop", "toolUse", "length"):
            self._context.measured()
        given_up = retried and not silent
        if self.due("reply", model, settings, cancel=cancel, reply=reply, given_up=given_up) == "overflow":
            written = self.run(model, settings, "overflow", cancel=cancel, will_retry=not silent)
            # With nothing written, a retry helps only when the newest result is sent cut.
            if silent or cancel.cancelled or written is None and not self._context.cuts_newest(model,
                                                                                              settings.compaction):
                return "done"
            self._context.drop_failed_reply(reply)
            return "retry"
        if retried and overflowed:
            self.gave_up_on = reply
            self._emit(CompactionEnd("overflow", None, error_message=OVERFLOW_GIVE_UP))
            return "done"
        return "done" if overflowed and self.enabled else None

    def due(self, point: Point, model: ChatModel, settings: Settings, *, cancel: CancelToken | None,
            reply: Mapping[str, Any] | None = None, given_up: bool = False) -> CompactionReason | None:
        """Measure at an automatic site and ask ``decide``; the guard and the background watch the
        threshold, not overflows."""
        overflowed = reply is not None and is_overflow_of(reply, model.info)
        cancelled = cancel is not None and cancel.cancelled
        if not overflowed and point != "reply" and not cancelled:
            self.clear_if_due(model, settings)  # clearing first: a compaction only if it is not enough
        usage, ready = self._context.usage_for(model, settings.compaction), False
        if not overflowed and point != "reply" and not cancelled:
            self.guard.observe(len(self._context.messages), usage.tokens, usage.threshold)
            self._consult_guard(model, settings)
            ready = self.background.tend(self._compactor(model, settings), self._context.estimator_of(model), usage,
                                         cancel, self.enabled and not self.guard.stopped)
        return decide(point, tokens=usage.tokens, context_window=usage.context_window, budgets=settings.compaction,
                      auto=self.enabled, guard_stopped=self.guard.stopped, overflowed=overflowed,
                      overflow_given_up=given_up, summary_ready=ready, cancelled=cancelled,
                      threshold=usage.threshold)

    def planned_cut(self, model: ChatModel, settings: Settings) -> int | None:
        """Where the next compaction would cut, in request messages, once the context is past the soft
        threshold; None before, where summaries are never asked on the prefix, or once tool results in
        the context are cleared. The chat request marks
        it for the prompt cache, so the summary request on that prefix reads what the chat request wrote."""
        compaction = settings.compaction
        if compaction.reuse_prefix == "never" or not model.prefix_by_default and compaction.reuse_prefix == "auto":
            return None
        usage = self._context.usage_for(model, compaction)
        if usage.tokens <= usage.threshold * compaction.soft_threshold_percent // 100:
            return None
        if self._context.clearing.carried(self._context.messages):
            # The requests carry stubs where a summary must read the originals: no summary can be asked on
            # their prefix, so no cut is planned (nor a breakpoint spent on it). A step clears everything
            # but the newest tool output, so a cleared result lies before any cut in practice.
            return None
        return planned_cut(self._store.branch_tail(), self._context.messages, compaction,
                           lambda messages: with_recall_hint(messages, False))

    def clear_if_due(self, model: ChatModel, settings: Settings) -> bool:
        """Clear old tool results from the requests when the context as sent is past the threshold and a
        large enough step is possible (``ToolClearing.step``); says so in one line. True when it cleared."""
        before = self._context.usage_for(model, settings.compaction).tokens

        def pinned() -> set[str]:  # asked only past the threshold: pins are read from the file
            return pinned_results(self._pins.current(self._store.customs_on_path, self._store.leaf_id))

        budgets = self._context.budgets_for(model, settings.compaction)  # the compaction threshold's own
        step = self._context.clearing.step(self._store, self._context.messages, self._context.estimator_of(model),
                                           settings.compaction, budgets, before, pinned, self._now())
        if step:
            after = self._context.usage_for(model, settings.compaction).tokens
            self._emit(Notice(cleared_notice(len(step), before - after, after), "info"))
        return bool(step)

    def navigator(self, model: ChatModel | None, settings: Settings) -> Navigator:
        """Tree moves and ``/uncompact`` of this session (``model`` None: no branch summaries)."""
        hooks = self._hooks if isinstance(self._hooks, TreeHooks) else None
        return Navigator(self._store, model, settings, self._emit, hooks, self._now,
                         self.summarizers.for_settings(settings),
                         self._context.answer_room(model) if model is not None else 0)

    def switch(self, enabled: bool) -> None:
        """``/autocompact on|off``: turning it on gives the loop guard a fresh start."""
        self.enabled = enabled
        self.guard.reset()

    def _compactor(self, model: ChatModel, settings: Settings) -> Compactor:
        return Compactor(self._store, model, settings, self._emit, self._hooks, now_ms=self._now, guard=self.guard,
                         diagnose=lambda: self._diagnose(model, settings),
                         summarizer=self.summarizers.for_settings(settings),
                         thinking=self.thinking.current(model) if self.thinking is not None else None,
                         measure=lambda messages: self._context.size_of(messages, model),
                         size_now=lambda: self._context.usage_for(model, settings.compaction).tokens,
                         estimator=self._context.estimator_of(model),
                         last_request=lambda: self._requests.last or self._unsent(model, settings),
                         sent=lambda: tuple(self._requests.sent))

    def _unsent(self, model: ChatModel, settings: Settings) -> ChatRequest | None:
        """With no chat request sent in this run (a resume): the one the next turn would send, whose prefix
        the provider may still hold from the last run. None once this run sent one (after a model switch
        the new model holds nothing)."""
        if self.thinking is None or self._requests.sent_any:
            return None
        return self._requests.peek(self._context.sent(), settings, self.thinking.current(model))

    def _diagnose(self, model: ChatModel, settings: Settings) -> str:
        return diagnose(self._system_prompt, self._store.branch(), self._context.estimator_of(model),
                        settings.compaction, model.info.context_window)

    def _consult_guard(self, model: ChatModel, settings: Settings) -> None:
        if self.guard.should_stop:  # said once: why automatic compaction stops
            self.guard.stop()
            self._emit(Notice(stop_notice(self._diagnose(model, settings), self.guard.whys), "warning"))


__all__ = ["Compactions"]
