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
from pi_compact.agent.compaction.guard import (
    MIN_FREED_SHARE,
    LoopGuard,
    after_compaction,
    diagnose,
    futile_notice,
    least_kept,
    stop_notice,
)
from pi_compact.agent.compaction.live_context import LiveContext
from pi_compact.agent.compaction.navigator import Navigator, TreeHooks
from pi_compact.agent.compaction.pipeline import CompactionHooks, Compactor
from pi_compact.agent.compaction.prefix_cost import LIFETIME_MARGIN_MS, planned_cut, send_first
from pi_compact.agent.compaction.reasons import OVERFLOW_GIVE_UP, cut_again_text, words
from pi_compact.agent.compaction.session_compactor import build_compactor
from pi_compact.agent.compaction.summarizer import Summarizers
from pi_compact.agent.compaction.triggers import Point, decide
from pi_compact.agent.events import CompactionEnd, CompactionReason, Notice, SessionEvent
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.cancel import CancelToken
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.compaction.window import WindowPlan
from pi_compact.llm.overflow import is_overflow_of, stated_prompt_tokens
from pi_compact.llm.params import NO_CACHE, cache_prices
from pi_compact.llm.protocol import ChatModel
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings

if TYPE_CHECKING:
    from pi_compact.agent.request import Requests


class Compactions:
    """One session's compactions: each runs through the pipeline (or commits a summary made ahead) and
    rebuilds the live context; between them the loop guard, the background job and the overflow that
    recovery gave up on are kept here. ``model`` and ``plan`` (``compaction.window``: the budgets in force)
    are the session's at each call; every figure here is read from the plan.
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
        self._checked_at = self.count  # the compactions written when the check before the prompt ended
        self._said_futile = -1  # the compaction count when a compaction that could not help was last skipped

    def run(self, model: ChatModel, plan: WindowPlan, reason: CompactionReason, *, instructions: str | None = None,
            cancel: CancelToken | None = None, will_retry: bool = False, keep: int | None = None,
            hint: bool = True) -> CompactionResult | None:
        """Compact now for ``reason``; after a written one, the warnings it calls for (``after_compaction``).

        ``keep`` (``/compact --keep N``) keeps about N recent tokens instead of ``keepRecentTokens``, this once."""
        if keep is not None:
            plan = replace(plan, settings=replace(plan.settings, compaction=replace(plan.settings.compaction,
                                                                                   keep_recent_tokens=keep)))
        percent = self._context.usage_for(model, plan).percent if words(reason).shows_percent else None
        result = self.background.run(self._compactor(model, plan, hint), self._context.estimator_of(model), reason,
                                     instructions=instructions, cancel=cancel, will_retry=will_retry,
                                     context_percent=percent)
        if result is not None:
            self.count += 1
            self._context.reload(self._store)
            pins = self._pins.current(self._store.customs_on_path, self._store.leaf_id)
            # As the next request carries it: when the newest result sent cut makes it fit, the compaction did
            # what could be done (neither futile for the loop guard nor a "could not bring under" warning).
            for warning in after_compaction(self._context.sent_usage_for(model, plan), self._context.messages,
                                            self._context.estimator_of(model), plan, pins, self.guard,
                                            automatic=words(reason).automatic, tokens_before=result.tokens_before,
                                            kept_over_budget=bool(result.details.get("keptOverBudget"))):
                self._emit(Notice(warning, "warning"))
        self._consult_guard(model, plan)
        return result

    def compact_if_due(self, point: Point, model: ChatModel, plan: WindowPlan, cancel: CancelToken | None,
                       reply: Mapping[str, Any] | None = None) -> bool:
        """Compact at an automatic site when ``decide`` says so; False when it did not."""
        reason = self.due(point, model, plan, cancel=cancel, reply=reply)
        if reason is not None:
            self.run(model, plan, reason, cancel=cancel)
        return reason is not None

    def before_prompt(self, model: ChatModel, plan: WindowPlan, cancel: CancelToken | None) -> None:
        """pi's pre-prompt check: the last fresh reply's overflow (unless given up on), else the threshold."""
        last = self._context.last_fresh_reply()
        given_up = last is not None and last == self.gave_up_on
        reason = self.due("before_prompt", model, plan, cancel=cancel, reply=last, given_up=given_up)
        self._checked_at = self.count
        if reason is not None and self.run(model, plan, reason, cancel=cancel) is not None \
                and reason == "overflow" and last is not None:
            self._context.drop_failed_reply(last)

    def before_send(self, model: ChatModel, plan: WindowPlan, cancel: CancelToken | None) -> bool:
        """The prompt just recorded may take the context past the threshold: clear old tool results first, and
        if that is not enough, compact before the request goes out (the prompt is then sent on the smaller
        context) unless sending first and compacting after is expected to cost less (``send_first``). True
        when it compacted."""
        if (cancel is not None and cancel.cancelled) or not self.enabled or self.guard.stopped:
            return False
        self.clear_if_due(model, plan)
        if self.count != self._checked_at:
            return False  # the check before the prompt compacted already: once more would only repeat it
        usage = self._context.usage_for(model, plan)
        if plan.window <= 0 or not plan.budgets.past(usage.tokens) or not self._can_help(model, plan, usage.tokens):
            return False
        if plan.fits(usage.tokens):  # the prompt could go out as it is: the cheaper order wins
            compactor = self._compactor(model, plan)
            last = compactor.last_request() if compactor.last_request is not None else None
            prices = cache_prices(model.info, last) if last is not None else NO_CACHE
            newest = self._requests.sent[-1].at_ms if self._requests.sent else None
            warm = newest is not None and self._now() - newest < prices.lifetime_ms - LIFETIME_MARGIN_MS
            held = usage.tokens - self._prompt_tokens(model) if warm else 0
            if send_first(compactor.summary_cost("threshold"), usage.tokens, held, prices):
                return False  # the turn goes out as it is; the compaction after the run follows
        return self.run(model, plan, "threshold", cancel=cancel) is not None

    def after_reply(self, model: ChatModel, plan: WindowPlan, reply: Mapping[str, Any], cancel: CancelToken,
                    retried: bool) -> Literal["retry", "done"] | None:
        """After a model reply: an overflow compacts, then ``retry`` once (the failed reply left out of the
        live context); a silent one keeps its answer (``done``, pi 0.80.2); an overflow right after its
        retry gives up and says so (``done``). None: no overflow to act on. An overflow that a smaller cut of
        the turn's newest tool result answers is retried with it instead, without a compaction when that
        could not free much (a model call spent on little), and however many overflows came before."""
        silent = reply.get("stopReason") == "stop"
        overflowed = is_overflow_of(reply, model.info)
        if overflowed:  # what the server counted corrects the estimates the compaction and retry plan with
            self._context.prove(reply, model)
        elif reply.get("stopReason") in ("stop", "toolUse", "length"):
            self._context.measured()
        cut_more = overflowed and not silent and not cancel.cancelled and self._context.shrinks_newest(model, plan)
        given_up = retried and not silent or \
            cut_more and not self._can_help(model, plan, self._context.usage_for(model, plan).tokens)
        if self.due("reply", model, plan, cancel=cancel, reply=reply, given_up=given_up) == "overflow":
            # (cut_more: with nothing to compact, the retry's cut is the answer, not a window to doubt)
            written = self.run(model, plan, "overflow", cancel=cancel, will_retry=not silent, hint=not cut_more)
            # With nothing written, a retry helps only when the newest result is sent cut.
            if silent or cancel.cancelled or written is None and not self._context.cuts_newest(model, plan):
                return "done"
            if written is None and cut_more:
                self._emit(Notice(cut_again_text(stated_prompt_tokens(str(reply.get("errorMessage") or ""))), "info"))
            self._context.drop_failed_reply(reply)
            return "retry"
        if cut_more:  # what the server counted gives a smaller cut (down to MIN_SHOWN_TOKENS), compaction on or off
            self._emit(Notice(cut_again_text(stated_prompt_tokens(str(reply.get("errorMessage") or ""))), "info"))
            self._context.drop_failed_reply(reply)
            return "retry"
        if retried and overflowed:
            self.gave_up_on = reply
            self._emit(CompactionEnd("overflow", None, error_message=OVERFLOW_GIVE_UP))
            return "done"
        return "done" if overflowed and self.enabled else None

    def due(self, point: Point, model: ChatModel, plan: WindowPlan, *, cancel: CancelToken | None,
            reply: Mapping[str, Any] | None = None, given_up: bool = False) -> CompactionReason | None:
        """Measure at an automatic site and ask ``decide``; the guard and the background watch the
        threshold, not overflows."""
        overflowed = reply is not None and is_overflow_of(reply, model.info)
        cancelled = cancel is not None and cancel.cancelled
        if not overflowed and point != "reply" and not cancelled:
            self.clear_if_due(model, plan)  # clearing first: a compaction only if it is not enough
        usage, ready = self._context.usage_for(model, plan), False
        if not overflowed and point != "reply" and not cancelled:
            self.guard.observe(self._context.added, usage.tokens, usage.threshold)
            self._consult_guard(model, plan)
            ready = self.background.tend(self._compactor(model, plan), self._context.estimator_of(model), usage,
                                         cancel, self.enabled and not self.guard.stopped)
        reason = decide(point, tokens=usage.tokens, context_window=usage.context_window,
                        budgets=plan.settings.compaction, auto=self.enabled, guard_stopped=self.guard.stopped,
                        overflowed=overflowed, overflow_given_up=given_up, summary_ready=ready, cancelled=cancelled,
                        threshold=usage.threshold)
        return None if reason == "threshold" and not ready and not self._can_help(model, plan, usage.tokens) \
            else reason

    def planned_cut(self, model: ChatModel, plan: WindowPlan) -> int | None:
        """Where the next compaction would cut, in request messages, once the context is past the soft
        threshold; None before, where summaries are never asked on the prefix, or once tool results in
        the context are cleared. The chat request marks
        it for the prompt cache, so the summary request on that prefix reads what the chat request wrote."""
        compaction = plan.settings.compaction
        if compaction.reuse_prefix == "never" or not model.prefix_by_default and compaction.reuse_prefix == "auto":
            return None
        usage = self._context.usage_for(model, plan)
        if usage.tokens <= plan.soft_threshold:
            return None
        if self._context.clearing.carried(self._context.messages):
            # The requests carry stubs where a summary must read the originals: no summary can be asked on
            # their prefix, so no cut is planned (nor a breakpoint spent on it). A step clears everything
            # but the newest tool output, so a cleared result lies before any cut in practice.
            return None
        return planned_cut(self._store.branch_tail(), self._context.messages, compaction,
                           lambda messages: with_recall_hint(messages, False))

    def clear_if_due(self, model: ChatModel, plan: WindowPlan) -> bool:
        """Clear old tool results from the requests when the context as sent is past the threshold and a
        large enough step is possible (``ToolClearing.step``); says so in one line. True when it cleared."""
        before = self._context.usage_for(model, plan).tokens

        def pinned() -> set[str]:  # asked only past the threshold: pins are read from the file
            return pinned_results(self._pins.current(self._store.customs_on_path, self._store.leaf_id))

        step = self._context.clearing.step(self._store, self._context.messages, self._context.estimator_of(model),
                                           plan.settings.compaction, plan.budgets, before, pinned, self._now())
        if step:
            after = self._context.usage_for(model, plan).tokens
            self._emit(Notice(cleared_notice(len(step), before - after, after), "info"))
        return bool(step)

    def navigator(self, model: ChatModel | None, plan: WindowPlan) -> Navigator:
        """Tree moves and ``/uncompact`` of this session (``model`` None: no branch summaries)."""
        hooks = self._hooks if isinstance(self._hooks, TreeHooks) else None
        return Navigator(self._store, model, plan.settings, self._emit, hooks, self._now,
                         self.summarizers.for_settings(plan.settings), plan)

    def switch(self, enabled: bool) -> None:
        """``/autocompact on|off``: turning it on gives the loop guard a fresh start."""
        self.enabled = enabled
        self.guard.reset()

    def _compactor(self, model: ChatModel, plan: WindowPlan, hint: bool = True) -> Compactor:
        return build_compactor(self._store, self._context, self._requests, model, plan, self._emit,
                               now_ms=self._now, summarizer=self.summarizers.for_settings(plan.settings),
                               hooks=self._hooks, guard=self.guard, diagnose=lambda: self._diagnose(model, plan),
                               overflow_hint=hint)

    def _can_help(self, model: ChatModel, plan: WindowPlan, tokens: int) -> bool:
        """Can a compaction now help? Not while the next request still fits the window, a big newest message must
        stay whole (the kept part is over ``keepRecentTokens`` for it) and summarizing the rest would neither bring
        the context under the threshold nor free the loop guard's share of it: that spends a model call on nothing
        (issue 44: 13,630 -> ~13,483 tokens, one 11,579-token read in the way). It is not asked for, and that is
        said once until a compaction runs; what else fills the context (a long system prompt) is the loop guard's
        to name."""
        if self._context.fits_cut(model, plan):
            return False  # a slow reader's newest result goes out cut, under the threshold: no room to make
        cut = self._context.cuts_newest(model, plan)
        if not plan.fits(self._context.sent_usage_for(model, plan).tokens if cut else tokens):
            return True  # the next request would not fit, even with the newest result cut: whatever a compaction frees
        planned = prepare_compaction(self._store.branch_tail(), plan.settings.compaction, keep_newest=True)
        if planned is None or planned.is_empty or not planned.kept_over_budget:
            return True  # nothing to summarize (the pipeline says nothing itself), or no big message in the way
        estimate = self._context.estimator_of(model)
        freed = sum(estimate(m) for m in (*planned.messages_to_summarize, *planned.turn_prefix_messages))
        if freed >= MIN_FREED_SHARE * tokens or tokens - freed <= plan.threshold:
            return True
        if self._said_futile != self.count and not cut:  # (cut: the request fits as it goes, nothing to say)
            self._said_futile = self.count
            kept = least_kept(self._context.messages, estimate)
            self._emit(Notice(futile_notice(freed, tokens, kept), "warning"))
        return False

    def _prompt_tokens(self, model: ChatModel) -> int:
        """The newest user message, as the session estimates it (what the prompt adds to the context)."""
        estimate = self._context.estimator_of(model)
        last = next((m for m in reversed(self._context.messages) if m.get("role") == "user"), None)
        return estimate(last) if last is not None else 0

    def _diagnose(self, model: ChatModel, plan: WindowPlan) -> str:
        return diagnose(self._system_prompt, self._store.branch(), self._context.estimator_of(model), plan)

    def _consult_guard(self, model: ChatModel, plan: WindowPlan) -> None:
        if self.guard.should_stop:  # said once: why automatic compaction stops
            self.guard.stop()
            self._emit(Notice(stop_notice(self._diagnose(model, plan), self.guard.whys), "warning"))


__all__ = ["Compactions"]
