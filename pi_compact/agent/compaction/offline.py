"""Headless compaction: one session file compacted with no session running (``pi-compact compact FILE``).

``compact_offline`` opens the file (holding its lock from reading to appending), fits the budgets to the
window, plans, resolves and builds the model through ``CommandModels`` (the composition root's seam:
this module builds no adapter), and runs the one pipeline (``Compactor.run("manual")``). The before and
after figures count the system prompt and tools the next request carries, as the terminal's do. It
prints nothing: events go to ``emit`` and the result comes back as an ``OfflineOutcome``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pi_compact.agent.compaction import engines
from pi_compact.agent.compaction.live_context import LiveContext
from pi_compact.agent.compaction.pipeline import Compactor
from pi_compact.agent.compaction.reasons import SKIP_TEXT, too_small_text
from pi_compact.agent.compaction.session_compactor import build_compactor
from pi_compact.agent.compaction.summarizer import Summarizer
from pi_compact.agent.events import CompactionEnd, CompactionStart, SessionEvent
from pi_compact.agent.opening import recorded_level
from pi_compact.agent.request import Requests
from pi_compact.agent.tools import Tool, session_tools
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction, skip_reason
from pi_compact.compaction.tokens import estimate_tokens_auto
from pi_compact.compaction.window import plan_window
from pi_compact.llm.protocol import ChatModel, ModelInfo
from pi_compact.llm.thinking import DEFAULT_LEVEL, LEVELS, clamp_level
from pi_compact.session.entries import Entry
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings


class CommandModels(Protocol):
    """How the command's models are found and built (``cli``, the composition root, implements it)."""

    def resolve(self, settings: Settings) -> ModelInfo:
        """The chat model's facts (its window above all), before anything is built."""
        ...

    def build(self, info: ModelInfo, settings: Settings) -> ChatModel:
        """The chat model, for settings already fitted to its window."""
        ...

    def summarizer(self, name: str, chat_model: str, settings: Settings) -> ChatModel:
        """``compaction.model`` (``name``), at the endpoint it shares with ``chat_model`` or its own."""
        ...


@dataclass(frozen=True)
class OfflineJob:
    """What to compact and how: the command's choices, already checked."""

    session: Path
    cwd: Path
    instructions: str | None = None
    allow_fallback: bool = True  # False: a failed model writes nothing instead of a model-free summary
    context_window: int | None = None  # given: the budgets are fitted (and checked) before the model is resolved
    sources: Mapping[str, str] | None = None  # where each setting came from, for the fitting's warnings


@dataclass(frozen=True)
class OfflineOutcome:
    """How it went: ``not_needed`` (a sentence) when nothing was worth compacting before any model was
    built, else the pipeline's one ``end`` event and how long the compaction itself took."""

    not_needed: str | None = None
    end: CompactionEnd | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class OfflineListener:
    """Where the run's words go: the fitting's warnings, who writes the summary (said as the compaction
    starts), and the session's events (retries, the compaction's start and end)."""

    warn: Callable[[Sequence[str]], None]
    starting: Callable[[str], None]
    emit: Callable[[SessionEvent], None]


def compact_offline(
    job: OfflineJob, settings: Settings, models: CommandModels, system_prompt: Callable[[Sequence[Tool]], str],
    listener: OfflineListener, cancel: CancelToken | None = None,
    guard: Callable[[CancelToken], AbstractContextManager[None]] | None = None,
) -> OfflineOutcome:
    """Compact ``job.session`` once; the file changes only by the one entry the pipeline appends.

    ``system_prompt`` is the prompt a session in ``job.cwd`` would send with these tools (the terminal's
    own), so that the figures are the next request's. ``guard`` holds while the summary is written (the
    command's: Ctrl-C cancels ``cancel`` then, and interrupts before, while the model is still loading).
    """
    # Held from reading to appending: a live session on the file refuses to start meanwhile, and one
    # already running makes this refuse.
    store = SessionStore.open(job.session, str(job.cwd), now_ms(), hold=True)
    try:
        listener.warn(store.warnings)
        return _compact(store, job, settings, models, system_prompt, listener, cancel or CancelToken(),
                        guard or (lambda _token: nullcontext()))
    finally:
        store.close()


def _fitted(settings: Settings, window: int, job: OfflineJob, listener: OfflineListener) -> Settings:
    fitted = plan_window(settings, None, window=window, sources=job.sources)
    listener.warn(fitted.warnings)
    return fitted.settings


@dataclass
class _Prepared:
    """A compaction ready to run: its compactor (built as the terminal builds its own), the branch, the plan
    made with the settings in force (None where fitting them to the model changed them) and who writes."""

    compactor: Compactor
    branch: list[Entry]
    plan: CompactionPlan | None
    writer: str
    ends: list[CompactionEnd] = field(default_factory=list)


def _prepare(
    store: SessionStore, job: OfflineJob, settings: Settings, models: CommandModels,
    system_prompt: Callable[[Sequence[Tool]], str], listener: OfflineListener,
) -> _Prepared | OfflineOutcome:
    if job.context_window is not None:  # the window is known without the model: check before planning
        settings = _fitted(settings, job.context_window, job, listener)
    branch = store.branch_tail()  # what the plan reads: older entries of a long session stay unread
    plan = prepare_compaction(branch, settings.compaction)
    planned_with = settings.compaction
    skip = skip_reason(branch, plan)
    if skip is not None:
        # Answered at once, without loading the model (litellm). Too small: how to compact anyway, as
        # the terminal's /compact says it, with the command's flag.
        return OfflineOutcome(not_needed=SKIP_TEXT[skip] if skip != "too_small" or plan is None else too_small_text(
            sum(estimate_tokens_auto(m) for m in plan.kept_messages), settings.compaction.keep_recent_tokens,
            hint="--keep-recent-tokens"))
    info = models.resolve(settings)
    level = session_level(store, settings)
    # The plan the terminal would hold for this session (silent where the settings were fitted already).
    window = plan_window(settings, info, clamp_level(info, level).level, sources=job.sources)
    listener.warn(window.warnings)
    settings = window.settings
    model = models.build(info, settings)
    summarizer = _summarizer(models, settings, info.model)
    writer = summarizer.name if summarizer is not None else info.model
    ends: list[CompactionEnd] = []

    def emit(event: SessionEvent) -> None:
        if isinstance(event, CompactionEnd):
            ends.append(event)
        elif isinstance(event, CompactionStart):
            listener.starting(writer)
        listener.emit(event)

    # Before and after counted as the terminal counts them: the system prompt and tools every request
    # carries, and the session's own calibration, so the figures are the next request's. The summary is
    # asked on the request the session's next turn would send, whose prefix the provider may still hold.
    context = LiveContext(store, settings.compaction.token_estimator)
    tools = session_tools(store, settings)
    requests = Requests(store, system_prompt(tools), tools, now_ms)
    context.overhead = requests.overhead
    compactor = build_compactor(store, context, requests, model, window, emit, now_ms=now_ms,
                                summarizer=summarizer, allow_fallback=job.allow_fallback)
    # The plan above is used unless fitting the settings to the model's window changed them.
    return _Prepared(compactor, branch, plan if settings.compaction == planned_with else None, writer, ends)


def _compact(
    store: SessionStore, job: OfflineJob, settings: Settings, models: CommandModels,
    system_prompt: Callable[[Sequence[Tool]], str], listener: OfflineListener, cancel: CancelToken,
    guard: Callable[[CancelToken], AbstractContextManager[None]],
) -> OfflineOutcome:
    prepared = _prepare(store, job, settings, models, system_prompt, listener)
    if isinstance(prepared, OfflineOutcome):
        return prepared
    started = time.monotonic()
    planned = (prepared.branch, prepared.plan) if prepared.plan is not None else None
    with guard(cancel):
        prepared.compactor.run("manual", instructions=job.instructions, cancel=cancel, planned=planned)
    return OfflineOutcome(end=prepared.ends[-1], seconds=time.monotonic() - started)


def offline_engine(
    job: OfflineJob, settings: Settings, models: CommandModels, system_prompt: Callable[[Sequence[Tool]], str],
    listener: OfflineListener,
) -> str | None:
    """The engine ``compact_offline`` would run first, and why (``engines.described``), for the dry run: the
    same compactor, built without holding the file and asked nothing. None when nothing would be compacted."""
    store = SessionStore.open(job.session, str(job.cwd), now_ms(), hold=False)
    try:
        prepared = _prepare(store, job, settings, models, system_prompt, listener)
        if isinstance(prepared, OfflineOutcome):
            return None
        compactor = prepared.compactor
        plan = prepared.plan or prepare_compaction(prepared.branch, compactor.settings.compaction, keep_newest=True)
        if plan is None:
            return None
        ctx = engines.EngineContext(compactor, "manual", prepared.branch, plan, job.instructions, now_ms())
        return engines.described(ctx, engines.choose(ctx, compactor.settings.compaction.engine))
    finally:
        store.close()


def session_level(store: SessionStore, settings: Settings) -> str:
    """The level the terminal would resume this session at without ``--thinking``: the file's latest
    ``thinking_level_change``, else ``defaultThinkingLevel``, else pi's default (``agent.opening``)."""
    level = recorded_level(store) or settings.default_thinking_level
    return level if level in LEVELS else DEFAULT_LEVEL


def _summarizer(models: CommandModels, settings: Settings, chat_model: str) -> Summarizer | None:
    """The ``compaction.model`` that writes the summary, if one other than the chat model is set."""
    name = settings.compaction.model
    if not name or name == chat_model:
        return None
    return Summarizer(name, lambda: models.summarizer(name, chat_model, settings))
