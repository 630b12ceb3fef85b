"""What every compaction engine shares (``engines`` orders them), and the local engine, pi-compact's own request.

``EngineContext`` is one compaction as an engine sees it; ``Engine`` the protocol each engine module implements;
``Refused`` what an engine raises to hand over to the next; ``LocalEngine`` the summary request on the cached
prefix or serialized, whichever ``prefix_cost`` expects to cost less, with the model-free summary behind it.
The compactor comes in as ``Summaries`` (what of ``pipeline.Compactor`` an engine reads), so nothing here
imports the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from pi_compact.agent.compaction.prefix_cost import DIGEST_KEY, Choice, choose, held_prefixes
from pi_compact.agent.compaction.reasons import CompactionReason
from pi_compact.agent.compaction.summarizer import Summarizer
from pi_compact.agent.events import SessionEvent
from pi_compact.agent.request import Sent
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.cancel import CancelToken
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.reuse import PrefixShape, reusable_prefix, serialized_sizes
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.llm.params import CachePrices, cache_prices
from pi_compact.llm.protocol import ChatModel, ChatRequest
from pi_compact.session.context import project_path
from pi_compact.session.entries import Entry
from pi_compact.session.history import RECALL_TOOL
from pi_compact.settings import Settings


class Summaries(Protocol):
    """What an engine reads of the compactor (``pipeline.Compactor``)."""

    @property
    def model(self) -> ChatModel: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def emit(self) -> Callable[[SessionEvent], None]: ...

    @property
    def summarizer(self) -> Summarizer | None: ...

    @property
    def last_request(self) -> Callable[[], ChatRequest | None] | None: ...

    @property
    def sent(self) -> Callable[[], Sequence[Sent]] | None: ...

    @property
    def request_digest(self) -> Callable[[ChatRequest], str] | None: ...


    def model_summary(self, plan: CompactionPlan, instructions: str | None, cancel: CancelToken,
                      shape: PrefixShape | None = None) -> CompactionResult: ...


LOCAL = "local"


class Refused(Exception):
    """An engine could not make this summary (the message says why, in one sentence): the next one is tried."""


@dataclass
class EngineContext:
    """One compaction as the engines see it: the compactor (model, settings, the last chat request), why it
    runs, the branch and its plan, the user's instructions, and when. The prefix shape is worked out once."""

    compactor: Summaries
    reason: CompactionReason
    branch: list[Entry]
    plan: CompactionPlan
    instructions: str | None
    at_ms: int  # now, by the compactor's clock (what the cache still holds depends on it)
    notes: list[dict[str, str]] = field(default_factory=list)  # engines passed over, and why

    @cached_property
    def priced(self) -> tuple[Choice, CachePrices] | None:
        """The last chat request's prefix before the cut, marking what the provider's cache still holds, and both
        ways priced; None on an overflow (that prefix no longer fits) or with no request starting with it."""
        last_request = self.compactor.last_request
        if self.reason == "overflow" or last_request is None:
            return None
        last = last_request()
        if last is None:
            return None
        recall = any(tool.name == RECALL_TOOL for tool in last.tools)  # the chat request's hint, as it was sent
        context = project_path(self.branch).messages
        to_llm = lambda ms: with_recall_hint(ms, recall)  # noqa: E731
        shape = reusable_prefix(last, context, self.plan, to_llm)
        if shape is None:
            return None
        compactor, info = self.compactor, self.compactor.model.info
        prices = cache_prices(info, last)
        digest_of = compactor.request_digest
        digest = digest_of(last) if digest_of is not None else None
        ours = {id(e.get("message")) for e in self.branch if digest is not None and e.get(DIGEST_KEY) == digest}
        held = held_prefixes(shape, context, compactor.sent() if compactor.sent is not None else (), info,
                             prices.marked, to_llm, digest, digest_of,
                             (lambda message: id(message) in ours) if digest is not None else None)
        return choose(shape, self.plan, self.instructions, held, prices, self.at_ms), prices

    @property
    def own_model(self) -> bool:
        """Does the chat model write summaries (no other ``compaction.model``)?"""
        summarizer = self.compactor.summarizer
        return summarizer is None or summarizer.name == self.compactor.model.info.model

    def provider_unfit(self) -> str | None:
        """Why no provider's own compaction can serve this one (one sentence), or None: it runs on the chat
        model, on the cached prefix before the cut, which an overflow no longer fits."""
        if not self.own_model:
            return f"compaction.model names another model than {self.compactor.model.info.model}, whose " \
                   "server would compact."
        if self.reason == "overflow":
            return "the context overflowed the window, so the provider cannot read it to compact it."
        if self.priced is None:
            return "no chat request of this session starts with the messages before the cut, so there is " \
                   "nothing for the provider to compact on."
        return None

    def prefix_request_cost(self, text: str = "") -> float:
        """A request on the whole part before the cut (then ``text``), in input-token units: its part the cache
        holds read, the rest written (the request marks it); infinite where there is no such prefix."""
        if self.priced is None:
            return float("inf")
        choice, prices = self.priced
        shape = choice.shape
        held = shape.held_in(shape.turn)
        read = shape.prompt_tokens(shape.turn[:held]) if held else 0
        return read * prices.read + max(0, shape.prompt_tokens(shape.turn, text) - read) * prices.write


class Engine(Protocol):
    """One way to make a summary."""

    @property
    def name(self) -> str: ...

    def unavailable(self, ctx: EngineContext) -> str | None:
        """Why this engine cannot serve this compaction (one sentence), or None."""

    def expected(self, ctx: EngineContext) -> float:
        """What its requests are expected to cost, in input-token units (``prefix_cost``)."""

    def summarize(self, ctx: EngineContext, cancel: CancelToken) -> CompactionResult:
        """The summary; raises ``Refused`` to hand over to the next engine, ``Cancelled`` on a cancel."""


class LocalEngine:
    """pi-compact's own summary request: on the cached prefix or serialized (``compaction.reusePrefix``), the
    model-free summary behind it (``summarize``). ``details.summaryRequest`` records the way and its prices."""

    name = LOCAL

    def unavailable(self, ctx: EngineContext) -> str | None:
        return None

    def expected(self, ctx: EngineContext) -> float:
        choice = self.choice(ctx)
        if choice is not None:
            return min(choice.prefix, choice.serialized)
        return float(sum(serialized_sizes(ctx.plan, ctx.instructions)))

    def choice(self, ctx: EngineContext) -> Choice | None:
        """The priced prefix the setting lets it use: never with "never", for another compaction model (it holds
        no cache of this one) or with "auto" where the provider keeps no prompt cache."""
        mode = ctx.compactor.settings.compaction.reuse_prefix
        if mode == "never" or not ctx.own_model or ctx.priced is None:
            return None
        if mode == "auto" and not ctx.compactor.model.prefix_by_default:
            return None
        return ctx.priced[0]

    def summarize(self, ctx: EngineContext, cancel: CancelToken) -> CompactionResult:
        choice = self.choice(ctx)
        mode = ctx.compactor.settings.compaction.reuse_prefix
        shape: PrefixShape | None = None if choice is None else choice.shape if mode == "always" else choice.cheaper
        result = ctx.compactor.model_summary(ctx.plan, ctx.instructions, cancel, shape=shape)
        if choice is None:
            return result
        asked = result.details.get("summaryRequest") or {"shape": "serialized"}
        return noted(result, {"summaryRequest": {**asked, **choice.note()}})


def noted(result: CompactionResult, extra: dict[str, Any]) -> CompactionResult:
    """``result`` with ``extra`` added to its details."""
    return CompactionResult(**{**vars(result), "details": {**result.details, **extra}})


__all__ = ["LOCAL", "Engine", "EngineContext", "LocalEngine", "Refused", "Summaries", "noted"]
