"""AgentSession: one conversation with one model, its session file, and every change to that file.

Compaction is asked for at each site (before a prompt; after each reply: an overflow compacts and
retries once, a silent one keeps its answer; between tool turns; after the run and a model switch)
and decided by ``triggers.decide``. ``/compact``, ``/tree``, ``/uncompact``, ``/pin``, ``/unpin`` and
``/name`` are methods: the UI and the CLI never write the store themselves. No UI imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pi_compact.agent.approval import ApprovalGate
from pi_compact.agent.compaction.coordinator import Compactions
from pi_compact.agent.compaction.live_context import LiveContext, reply_key
from pi_compact.agent.compaction.navigator import Navigator
from pi_compact.agent.compaction.pipeline import CompactionHooks
from pi_compact.agent.compaction.prefix_cost import DIGEST_KEY
from pi_compact.agent.compaction.reasons import CompactionReason
from pi_compact.agent.compaction.recall import AutoRecall
from pi_compact.agent.events import (
    Notice,
    SessionEvent,
    TreeOutcome,
    UncompactOutcome,
)
from pi_compact.agent.loop import LoopHooks, LoopStop, run_prompt
from pi_compact.agent.opening import Opening, ThinkingLevel, record_model
from pi_compact.agent.request import Requests
from pi_compact.agent.tools import Tool, ToolContext
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.compaction.tokens import ContextUsage, Estimator
from pi_compact.compaction.window import WindowPlan, plan_window
from pi_compact.llm.protocol import ChatModel
from pi_compact.llm.thinking import Clamped
from pi_compact.messages import Message
from pi_compact.session.pins import Pin, fold_pins, pin_for, unpin_fields
from pi_compact.session.store import SessionStore
from pi_compact.session.tree import name_fields, session_name
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
        thinking: str | None = None,
    ) -> None:
        self._store, self._model, self._tools, self._cwd = store, model, list(tools), cwd
        self._system_prompt, self._emit, self._now = system_prompt, emit, now_ms
        self._settings = settings
        self._context = LiveContext(store, settings.compaction.token_estimator)
        self._requests = Requests(store, system_prompt, tools, now_ms, recall=AutoRecall())
        self._context.overhead = self._requests.overhead  # an estimated size counts what every request carries
        self._compactions = Compactions(store, self._context, self._requests, emit, hooks=hooks, now_ms=now_ms,
                                        system_prompt=system_prompt, enabled=auto_compact,
                                        make_summarizer=make_summarizer)
        self.approval: ApprovalGate | None = None  # the approval mode's gate; None runs every call (pi's way)
        # ``thinking``: --thinking; else the file's latest level, else defaultThinkingLevel (agent.opening).
        self._thinking = ThinkingLevel(store, Opening(store, due=not self._context.messages, now_ms=now_ms),
                                       flag=thinking, default=settings.default_thinking_level,
                                       notify=lambda text: emit(Notice(text, "info")), now_ms=now_ms)
        self.loop_stop: LoopStop | None = None  # why the last prompt's tool loop was stopped (``agent.loop``)
        self.watch_edits = True  # stop edit churn and ask (``agent.churn``); print mode, with nobody to ask, does not
        self._sources: Mapping[str, str] | None = None  # where each setting was set (the plan's warnings name it)
        self._plan: WindowPlan | None = None
        self._plan_inputs: tuple[Any, ...] = ()
        self.refits = 0  # how many times the plan was built (a test counts them: once per change of an input)

    # ---- what the UI reads -----------------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        """The session file: read it here, change it through the methods below."""
        return self._store

    @property
    def model(self) -> ChatModel:
        return self._model

    @property
    def settings(self) -> Settings:
        """As given (``plan.settings``: fitted, the budgets in force)."""
        return self._settings

    @property
    def messages(self) -> Sequence[Message]:
        """The live context: what the next request carries."""
        return self._context.messages

    @property
    def sent_messages(self) -> Sequence[Message]:
        """The live context as the next request carries it: old tool results as stubs (``clearToolResults``)."""
        return self._context.sent()

    def cleared_tool_output(self) -> tuple[int, int]:
        """How many tool results of the live context the request leaves out, and their tokens (less the stubs)."""
        return self._context.clearing.cleared_in(self._context.messages, self.estimator)

    @property
    def compactions(self) -> int:
        return self._compactions.count

    @property
    def auto_compact(self) -> bool:
        """Automatic compaction switched on (``/autocompact``, ``--no-auto-compact``); see ``compaction_stopped``."""
        return self._compactions.enabled

    @property
    def compaction_stopped(self) -> bool:
        """The loop guard stopped automatic compaction for this session (``/autocompact on`` restarts it)."""
        return self._compactions.guard.stopped

    @property
    def estimator(self) -> Estimator:
        """The session's one token estimator (``compaction.tokenEstimator``; ``auto`` calibrated by usage)."""
        return self._context.estimator_of(self._model)

    @property
    def plan(self) -> WindowPlan:
        """The budgets in force (``compaction.window``): the window, reserve, keep, output cap, thinking budget,
        answer room and threshold every figure, trigger, clearing step and request reads. Held, and built
        again only when one of its inputs changed: the model (or its facts, once it resolves), the settings,
        the thinking level in force or the pins (what every request carries)."""
        inputs = self._inputs()
        if self._plan is None or inputs != self._plan_inputs:
            self._plan, self._plan_inputs = self._refit(), inputs
        return self._plan

    def window_plan(self, sources: Mapping[str, str] | None = None) -> WindowPlan:
        """The plan for the model's window, which this resolves first (it may wait for it), its warnings naming
        where each replaced value was set (``sources``: the settings files' record of it)."""
        self._sources = sources
        self._model.info  # noqa: B018 - resolves a model still resolving, so the plan has its window
        return self.plan

    def _inputs(self) -> tuple[Any, ...]:
        model = self._model
        info = model.info if model.ready else None
        pins = self._requests.pins.current(self._store.customs_on_path, self._store.leaf_id)
        return (model, info, self._settings, self._sources, self._thinking.current(model), pins)

    def _refit(self) -> WindowPlan:
        """The one place the plan is built (``plan_window``)."""
        self.refits += 1
        info = self._model.info if self._model.ready else None
        # What every request carries, by the base estimator: a calibration of it would change the plan.
        fixed = self._requests.overhead(self._context.base)
        return plan_window(self._settings, info, self._thinking.current(self._model), sources=self._sources,
                           fixed_tokens=fixed)

    def estimated_size(self) -> int:
        """The context all estimated (no provider usage): what the status line shows while the model loads."""
        estimate = self._context.estimator(self._context.base)
        return self._context.fixed(estimate) + sum(estimate(m) for m in self._context.sent())

    def fixed_tokens(self) -> int:
        """The system prompt, pins and tools every request carries, by the session's estimator."""
        return self._context.fixed(self.estimator, reply_key(self._model))

    def context_usage(self) -> ContextUsage:
        """The last fresh provider usage plus estimates of what follows it (else all estimated)."""
        return self._context.sent_usage_for(self._model, self.plan)

    def reload_context(self) -> None:
        """Rebuild the live context from the session file (after anything that changed the branch)."""
        self._context.reload(self._store)

    def close(self) -> None:
        """Done: a background summary is dropped, and other programs may write the file again."""
        self._compactions.background.close()
        self._store.close()

    # ---- compaction and prompting ---------------------------------------------------------------

    def compact(self, instructions: str | None = None, cancel: CancelToken | None = None,
                reason: CompactionReason = "manual", will_retry: bool = False,
                keep: int | None = None) -> CompactionResult | None:
        """Compact now (``/compact [--keep N]``, or for ``reason``); the live context is rebuilt right after."""
        return self._compactions.run(self._model, self.plan, reason, instructions=instructions,
                                     cancel=cancel, will_retry=will_retry, keep=keep)

    def check_before_prompt(self, cancel: CancelToken | None = None) -> None:
        """pi's pre-prompt check: the last fresh reply's overflow (unless given up on), else the threshold."""
        self._compactions.before_prompt(self._model, self.plan, cancel)

    def add_message(self, message: Message, fields: Mapping[str, Any] | None = None) -> None:
        """Record ``message`` in the file and the live context (also one made outside a turn: ``!cmd``);
        ``fields``: ours on its entry beside pi's."""
        entry = self._store.append_message(message, self._now(), fields)
        self._context.add(message)
        self._context.clearing.note(entry)

    def prompt(self, text: str, cancel: CancelToken | None = None) -> dict[str, Any] | None:
        """Run one user prompt to completion (``agent.loop.run_prompt``); returns the final assistant message."""
        token = cancel or CancelToken()
        self.check_before_prompt(token)
        if token.cancelled:
            return None
        approve = self.approval.allows if self.approval is not None else None
        final, self.loop_stop = run_prompt(text, self._model, self._hooks(token), self._tools,
                                           ToolContext(self._cwd, token), self._emit, approve,
                                           self._settings.max_turns, self._now, watch_edits=self.watch_edits)
        # An error reply is checked too (pi #1834); an aborted one or a cancel starts nothing.
        if final.get("stopReason") != "aborted":
            self._compactions.compact_if_due("after_run", self._model, self.plan, token, final)
        return final

    def _hooks(self, cancel: CancelToken) -> LoopHooks:
        def record(message: Message) -> None:
            self._thinking.open(self._model)  # a new session's opening entries come first (once)
            last = self._requests.last
            # A reply's entry names the request it answered (this agent, its system prompt, tools and thinking):
            # a resumed session asks a summary on a prefix only where the cache can hold it (``prefix_cost``).
            answered = {DIGEST_KEY: self._requests.digest(last)} \
                if message.get("role") == "assistant" and last is not None else None
            self.add_message(message, answered)

        return LoopHooks(
            request=lambda: self._requests.next(self._context.sent_to(self._model, self.plan), self.plan,
                                                self._thinking.sync(self._model.info),
                                                self._context.clearing.cleared.keys(),
                                                self._compactions.planned_cut(self._model, self.plan)),
            record=record,
            after_reply=lambda reply, retried: self._compactions.after_reply(
                self._model, self.plan, reply, cancel, retried),
            between_turns=lambda: self._compactions.compact_if_due("tool_turn", self._model, self.plan, cancel),
            before_send=lambda: self._compactions.before_send(self._model, self.plan, cancel))

    # ---- the tree, pins and the name: one appended entry each ------------------------------------

    def navigate(self, target_id: str, *, summarize: bool = False, instructions: str | None = None,
                 cancel: CancelToken | None = None) -> TreeOutcome | None:
        """``/tree``: move the leaf to ``target_id``, optionally summarizing the branch left (see ``Navigator``)."""
        navigator = self._compactions.navigator(self._model if summarize else None, self.plan)
        outcome = navigator.navigate(target_id, summarize=summarize, instructions=instructions, cancel=cancel)
        if outcome is not None:
            self.reload_context()
        return outcome

    def uncompact(self, *, force: bool = False) -> UncompactOutcome:
        """``/uncompact``: undo the branch's latest compaction; raises ``CompactionError`` to refuse."""
        outcome = self._compactions.navigator(self._model, self.plan).uncompact(force=force)
        self.reload_context()
        return outcome

    def pin(self, text: str = "") -> tuple[Pin, ...] | None:
        """Pin ``text`` (empty: the user's last message); the branch's pins then, None with nothing to pin."""
        fields = pin_for(self._store.branch(), text)
        if fields is None:
            return None
        self._store.append(fields, self._now())
        return fold_pins(self._store.branch())

    def unpin(self, pin: Pin) -> None:
        self._store.append(unpin_fields(pin), self._now())

    def rename(self, name: str) -> str | None:
        """``/name``: the session's name from now on (empty clears it); returns it as stored."""
        self._store.append(name_fields(name), self._now())
        return session_name(self._store.entries)

    # ---- the thinking level: pi's setThinkingLevel and cycleThinkingLevel (``agent.opening``) ----------

    @property
    def thinking_level(self) -> str:
        return self._thinking.current(self._model)

    def set_thinking_level(self, level: str) -> Clamped:
        """``/thinking LEVEL``: clamped to the model (told once); one entry when it changed."""
        return self._thinking.set(self._model, level)

    def cycle_thinking_level(self) -> str:
        return self._thinking.cycle(self._model)

    # ---- settings ------------------------------------------------------------------------------

    def set_model(self, model: ChatModel, cancel: CancelToken | None = None) -> None:
        """Switch models; compact first when the context would not fit the new window's threshold."""
        self._thinking.open(self._model)  # a new session records the model it started with first, as pi does
        self._model = model
        self._requests.forget()  # the new model holds no cache of the requests sent so far
        record_model(self._store, model.info, self._now())
        self._thinking.sync(self._model.info)  # re-clamped to the new model: one notice, one entry if it changed
        self._compactions.compact_if_due("model_switch", self._model, self.plan, cancel)

    def set_settings(self, settings: Settings) -> None:
        self._settings = settings
        self._compactions.summarizers.forget()  # their ``models`` entries may have changed
        self._context.configure(settings.compaction.token_estimator)

    def set_auto_compaction(self, enabled: bool) -> None:
        self._compactions.switch(enabled)
        self._settings = replace(self._settings, compaction=replace(self._settings.compaction, enabled=enabled))


def uncompact_store(store: SessionStore, settings: Settings, *, force: bool = False, context_window: int | None = None,
                    now_ms: Callable[[], int] = now_ms) -> UncompactOutcome:
    """``/uncompact`` on a session file with no session running (``pi-compact uncompact``)."""
    return Navigator(store, None, settings, now_ms=now_ms).uncompact(force=force, context_window=context_window)
