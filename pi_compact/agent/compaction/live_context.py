"""The live context: the messages the next request carries, which of them are fresh, and how full they are.

Rebuilt from the file at start and after every compaction, it grows as the turn goes. Usage recorded
before the latest compaction measured a context that no longer exists (pi #1860), so only messages
from ``fresh_from`` on anchor the count; with the ``auto`` estimator every estimate is scaled by what
the replies measured (``compaction/calibration.py``); what they measured is carried over a
compaction (and any other rebuild), so the figures before and after it are estimated alike.

``messages`` are the originals (what the file holds, what calibration pairs with usage); ``sent()`` is
what the request carries, old tool results cleared (``clearing``), and every size here is of that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pi_compact.agent.compaction.clearing import ToolClearing
from pi_compact.compaction.calibration import (
    MAX_FACTOR,
    MIN_FACTOR,
    Pair,
    Scan,
    anchor_framing,
    calibrated,
    calibration_of,
    carried_pairs,
    measured_fixed,
    scan,
    without_repeats,
)
from pi_compact.compaction.tokens import (
    UNCALIBRATED,
    Calibration,
    ContextUsage,
    Estimator,
    context_usage,
    estimator_for,
)
from pi_compact.compaction.window import WindowPlan
from pi_compact.llm.protocol import ChatModel
from pi_compact.messages import Message
from pi_compact.session.context import fresh_start, project_path
from pi_compact.session.store import SessionStore
from pi_compact.settings import TokenEstimator


def reply_key(model: ChatModel) -> tuple[str, str] | None:
    """(provider, model id) as ``model``'s replies record them: whose calibration counts (None while
    it still resolves: then the model that answered last)."""
    if not model.ready:
        return None
    return (model.info.provider, model.info.model_id)


class LiveContext:
    """The session's messages as the model sees them (``messages``) and where fresh usage starts."""

    def __init__(self, store: SessionStore, token_estimator: TokenEstimator) -> None:
        self.messages: list[Message] = []
        self.fresh_from = 0  # messages before this index predate the latest compaction
        # The system prompt, pins and tools every request carries, by an estimator (set by the session):
        # provider usage counts them, so a context size that is all estimated adds them too.
        self.overhead: Callable[[Estimator], int] = lambda _estimate: 0
        self.configure(token_estimator)
        # The calibration scan so far (and what it gave), carried on as messages are appended; the
        # estimator and the last message it saw tell a scan of other messages (or with another
        # estimator) from a stale one.
        self._scan: tuple[Scan, Estimator, Message | None, tuple[str, str] | None, Calibration] | None = None
        self._earlier: tuple[Pair, ...] = ()  # pairs measured on the contexts this one replaced (this run)
        # What the provider counted for the system prompt and tools over their estimate, measured on the
        # session's first request (this run): tool definitions are JSON, which costs more than chars/4 says.
        self._fixed_ratio: dict[tuple[str, str] | None, float] = {}  # by model: another tokenizer, another ratio
        self.clearing = ToolClearing()  # old tool results the requests carry as stubs
        # Messages recorded in this run: a count that only grows (a compaction shortens ``messages``), by which
        # the loop guard tells a new turn from a check of the same one.
        self.added = 0
        self.reload(store)

    def configure(self, token_estimator: TokenEstimator) -> None:
        """Estimate with ``compaction.tokenEstimator`` (``auto``: scaled by what the replies measured)."""
        self.base = estimator_for(token_estimator)
        self.calibrate = token_estimator == "auto"

    def estimator_of(self, model: ChatModel) -> Estimator:
        """The estimator for requests to ``model``: ``base``, calibrated by its replies when ``calibrate``."""
        return self.estimator(self.base, reply_key(model))

    def usage_for(self, model: ChatModel, plan: WindowPlan) -> ContextUsage:
        """How full the context is for ``model``: the plan's window, and its threshold (one threshold for
        clearing, compaction and every figure)."""
        return self.usage(self.base, plan.window, plan.threshold, reply_key(model))

    def size_of(self, messages: Sequence[Message], model: ChatModel) -> int:
        """A context of ``messages`` as the next request to ``model`` would carry it, all estimated the one
        way the status line estimates (the compaction block's before and after, the no-gain check)."""
        estimate = self.estimator_of(model)
        return self.fixed(estimate, reply_key(model)) + sum(estimate(m) for m in self.clearing.sent(messages))

    def fixed(self, estimate: Estimator, model: tuple[str, str] | None = None) -> int:
        """The system prompt, pins and tools every request carries: as the provider counted them on the
        session's first request (scaled to what they hold now), else ``overhead`` by ``estimate``."""
        if not self.calibrate:
            return self.overhead(estimate)
        ratio = self._fixed_ratio.get(model)
        if ratio is None:
            counted = measured_fixed(self.messages, estimate, model)
            planned = self.overhead(self.base)
            if counted is None or planned <= 0:
                return self.overhead(estimate)
            ratio = self._fixed_ratio[model] = min(MAX_FACTOR, max(MIN_FACTOR, counted / planned))
        return round(ratio * self.overhead(self.base))

    def reload(self, store: SessionStore) -> None:
        """Rebuild from the file (the summary, the kept tail, everything after)."""
        # The tail is all the context is made of (its projection is what ``context`` gives): a resumed
        # session's older entries stay unread.
        self._carry()
        branch = store.branch_tail()
        context = project_path(branch)
        self.messages = list(context.messages)
        self.fresh_from = fresh_start(branch, context)
        self._scan = None
        self.clearing.reload(store, len(self.messages))

    def add(self, message: Message) -> None:
        """``message`` was recorded: it is the newest of the context now."""
        self.messages.append(message)
        self.added += 1

    def sent(self) -> list[Message]:
        """The messages as the next request carries them: cleared tool results as their stubs."""
        return self.clearing.sent(self.messages)

    def _carry(self) -> None:
        """Keep what the replies of the context about to be replaced measured (see ``carried_pairs``)."""
        if not self.calibrate or self._scan is None:
            return  # nothing was ever estimated with a calibration on this context
        done = scan(self.messages, self._scan[1], fresh_from=self.fresh_from)
        self._earlier = carried_pairs(without_repeats(self._earlier, done), done, self.messages)

    def calibration(self, estimator: Estimator, model: tuple[str, str] | None = None) -> Calibration:
        """What the replies in the context give for ``estimator`` (nothing unless ``calibrate``): the
        replies of ``model`` (the one the next request goes to), else of the model that answered last.

        Why ``model``: after a switch the old model's factor measured another tokenizer; the new one's
        own replies (from earlier in the session, or its next ones) are what counts.
        """
        if not self.calibrate:
            return UNCALIBRATED
        since = None
        if self._scan is not None:
            done, used, last, for_model, result = self._scan
            if used is estimator and done.end <= len(self.messages) and \
                    (self.messages[done.end - 1] if done.end else None) is last:
                if done.end == len(self.messages) and for_model == model:
                    return result  # nothing new since (the status line asks often)
                since = done
        found = scan(self.messages, estimator, fresh_from=self.fresh_from, since=since)
        result = calibration_of(found, self.messages, model, without_repeats(self._earlier, found))
        self._scan = (found, estimator, self.messages[-1] if self.messages else None, model, result)
        return result

    def estimator(self, estimator: Estimator, model: tuple[str, str] | None = None) -> Estimator:
        """``estimator`` scaled by the calibration (``estimator`` itself when there is none)."""
        return calibrated(estimator, self.calibration(estimator, model))

    def usage(
        self, estimator: Estimator, window: int, threshold: int, model: tuple[str, str] | None = None
    ) -> ContextUsage:
        """The last fresh provider usage plus (calibrated) estimates of what follows it, else all estimated."""
        calibration = self.calibration(estimator, model)
        scaled = calibrated(estimator, calibration)
        estimate = context_usage(self.messages, scaled, fresh_from=self.fresh_from)
        anchored = estimate.last_usage_index is not None  # a provider's usage counts the overhead already
        framing = anchor_framing(calibration, estimate, self.messages)
        tokens = estimate.tokens + framing if anchored else estimate.tokens + self.fixed(scaled, model)
        # As sent: what the anchoring usage (or the estimate) counted of results cleared since is not carried.
        tokens -= self.clearing.unsent_saving(self.messages, scaled, estimate.last_usage_index)
        return ContextUsage(tokens, window, threshold, anchored, calibration)

    def last_fresh_reply(self) -> Message | None:
        """The newest assistant message written since the latest compaction."""
        return next((m for m in reversed(self.messages[self.fresh_from :]) if m.get("role") == "assistant"), None)

    def drop_failed_reply(self, reply: Mapping[str, Any]) -> None:
        """After an overflow compaction, leave the overflowed reply out of the rebuilt live context.

        It is the last entry of the file, so it lands in the kept tail (pi drops only ``error`` tails,
        delta §9.4). It is no conversation: an ``error`` or empty ``length`` reply is skipped on the
        wire, but in the live context it would sit between the prompt and the retried answer and
        shift what counts as fresh usage. It stays in the file.
        """
        if reply.get("stopReason") != "stop" and self.messages and self.messages[-1] == reply:
            self.messages.pop()
            self.fresh_from = min(self.fresh_from, len(self.messages))  # what follows is fresh
            self._scan = None


__all__ = ["LiveContext", "reply_key"]
