"""The model that writes a summary (``compaction.model``, else the chat model) and what its requests used.

A named summarizer gets requests sized for its own window, and its failures (even a missing key or an
unknown window) are summarization failures that name it; the chat model is not at fault, so the
compaction still happens. ``details.summaryModel`` and ``details.usage`` record who wrote it and at what cost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pi_compact.agent.compaction.reasons import model_answered
from pi_compact.cancel import CancelToken
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.reuse import PrefixShape
from pi_compact.compaction.summarize import CompactionResult, SummaryBudget, summarize
from pi_compact.errors import AuthError, CompactionError, ModelError, PiCompactError
from pi_compact.llm.output_cap import MIN_ANSWER
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    ModelInfo,
    Retrying,
    StreamEvent,
    WrappedModel,
    empty_usage,
    error_message,
)
from pi_compact.llm.retry_watch import RetryWatcher
from pi_compact.llm.thinking import clamp_level
from pi_compact.settings import Settings
from pi_compact.usage import add_usage

T = TypeVar("T")


@dataclass(frozen=True)
class Summarizer:
    """A summary model other than the chat model: its name, and how to build it (which may fail)."""

    name: str
    make: Callable[[], ChatModel]


class Summarizers:
    """The session's compaction models, built on first use and kept (their state, such as a learned
    window, lasts the session) until the settings change."""

    def __init__(self, make: Callable[[str, Settings], ChatModel] | None) -> None:
        self._make = make
        self._built: dict[str, ChatModel] = {}
        self._lock = threading.Lock()

    def for_settings(self, settings: Settings) -> Summarizer | None:
        """The summarizer ``compaction.model`` names (None: the chat model writes summaries)."""
        name = settings.compaction.model
        if not name or self._make is None:
            return None
        return Summarizer(name, lambda: self._get(name, settings))

    def _get(self, name: str, settings: Settings) -> ChatModel:
        assert self._make is not None
        with self._lock:
            if name not in self._built:
                self._built[name] = self._make(name, settings)  # a failure is not kept: tried again next time
            return self._built[name]

    def forget(self) -> None:
        """Build them afresh (the settings, and so their ``models`` entries, may have changed)."""
        with self._lock:
            self._built.clear()


class UsageMeter(WrappedModel):
    """A ``ChatModel`` that adds up the usage of every reply it streams (safe across threads).

    With ``soft_auth`` a missing API key becomes a failed reply instead of an ``AuthError``.
    """

    def __init__(self, model: ChatModel, *, soft_auth: bool = False) -> None:
        super().__init__(model)
        self._soft_auth = soft_auth
        self._usage: dict[str, Any] = empty_usage()
        self._lock = threading.Lock()

    @property
    def usage(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._usage)

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        try:
            events = self.wrapped.stream(request, cancel)
        except AuthError as exc:
            if not self._soft_auth:
                raise
            return iter([Done(error_message(self.wrapped.info, str(exc)))])
        return self._count(events)

    def _count(self, events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
        for event in events:
            if isinstance(event, Done) and isinstance(event.message.get("usage"), Mapping):
                with self._lock:
                    self._usage = add_usage(self._usage, event.message["usage"])
            yield event


class _Unavailable(ChatModel):
    """Stands in for a compaction model that could not be built: every request fails with ``reason``.

    It borrows the chat model's info, which only sizes requests that are never sent.
    """

    def __init__(self, info: ModelInfo, reason: str) -> None:
        self._info = info
        self._reason = reason

    @property
    def info(self) -> ModelInfo:
        return self._info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        return iter([Done(error_message(self._info, self._reason))])


@dataclass(frozen=True)
class Chosen:
    """The model a summary goes to (metered), its name, and how its failures start (None: the chat model)."""

    meter: UsageMeter
    name: str
    label: str | None  # how failures start when the summarizer is not the chat model

    def run(self, work: Callable[[], T]) -> T:
        """``work``'s result; a model failure then names the summarizer (not a missing key: the user's)."""
        try:
            return work()
        except (ModelError, CompactionError) as exc:
            if self.label is None or isinstance(exc, AuthError):
                raise
            raise CompactionError(f"{self._named()}: {exc}") from exc

    def record(self, details: Mapping[str, Any]) -> dict[str, Any]:
        """``details`` plus the model's name and the usage of its requests; a fallback's error names it."""
        recorded = {**details, "summaryModel": self.name, "usage": self.meter.usage}
        if self.label is not None and recorded.get("error"):
            recorded["error"] = f"{self._named()}: {recorded['error']}"
        return recorded

    def _named(self) -> str | None:
        # A summarizer that answered did not fail: its answer was unusable (the error says why).
        return f"The compaction model {self.name}" if model_answered({"usage": self.meter.usage}) else self.label


def choose(chat: ChatModel, summarizer: Summarizer | None) -> Chosen:
    """The summarizer when one is named (built now, or standing in with its failure), else the chat model.

    A summarizer that cannot be built or resolved fails its requests (``_Unavailable``): the strict
    retry, then the model-free summary (or with ``--no-fallback`` nothing) follow as for any failure.
    """
    if summarizer is None or summarizer.name == chat.info.model:
        return Chosen(UsageMeter(chat), chat.info.model, None)
    label = f"The compaction model {summarizer.name} failed"
    try:
        model = summarizer.make()
        model.info  # noqa: B018 - resolving it now surfaces an unknown window here, not mid-request
    except PiCompactError as exc:
        model = _Unavailable(chat.info, str(exc))
    return Chosen(UsageMeter(model, soft_auth=True), summarizer.name, label)


def write_summary(
    plan: CompactionPlan,
    chat: ChatModel,
    summarizer: Summarizer | None,
    reserve_tokens: int,
    *,
    instructions: str | None,
    cancel: CancelToken,
    allow_fallback: bool,
    on_retry: Callable[[Retrying], None],
    thinking: str | None = None,
    shape: PrefixShape | None = None,
    planned: tuple[int, int] | None = None,
) -> CompactionResult:
    """Summarize ``plan`` with the summarizer (else the chat model), sized for its window; the result's
    ``details`` name the model and hold the usage of all its requests. ``shape``: the last chat request's
    prefix to ask on (only for the chat model: another model has no cache of it). ``planned``: the session's
    output cap and thinking budget, which the chat model's summary requests send as its chat requests do."""
    chosen = choose(chat, summarizer)
    info = chosen.meter.info
    budget = SummaryBudget.for_model(info.context_window, info.max_output_tokens, reserve_tokens)
    # The chat model: the conversation's cap and budget, where that leaves half the window for the question and
    # room for a summary after the thinking.
    if planned is not None and chosen.label is None and planned[0] <= info.context_window // 2 \
            and planned[0] - planned[1] >= MIN_ANSWER:
        budget = SummaryBudget.planned(info.context_window, *planned)
    model = RetryWatcher(chosen.meter, on_retry)  # the spinner shows "retrying (2/3)…"
    reasoning = summary_reasoning(info, thinking)
    shape = shape if chosen.label is None else None
    result = chosen.run(lambda: summarize(plan, model, budget, instructions=instructions, cancel=cancel,
                                          allow_fallback=allow_fallback, reasoning=reasoning, shape=shape))
    details = chosen.record(result.details)  # a fallback's details hold its error (``summarize``)
    error = details.get("error") if result.error is not None else None
    return CompactionResult(**{**vars(result), "details": details, "error": error})


def summary_reasoning(info: ModelInfo, thinking: str | None) -> str | None:
    """pi 0.73's summary reasoning: the session's level (clamped to the summary model) when that model
    reasons and the level is not off; else none."""
    if not info.reasoning or thinking is None or thinking == "off":
        return None
    level = clamp_level(info, thinking).level
    return None if level == "off" else level


__all__ = ["Chosen", "Summarizer", "Summarizers", "UsageMeter", "choose", "summary_reasoning", "write_summary"]
