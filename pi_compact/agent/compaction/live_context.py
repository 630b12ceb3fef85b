"""The live context: the messages the next request carries, which of them are fresh, and how full they are.

Rebuilt from the file at start and after every compaction, it grows as the turn goes. Usage recorded
before the latest compaction measured a context that no longer exists (pi #1860), so only messages
from ``fresh_from`` on anchor the count; with the ``auto`` estimator every estimate is scaled by what
the replies measured (``compaction/calibration.py``); what they measured is carried over a
compaction (and any other rebuild), so the figures before and after it are estimated alike. An
overflow error that states the prompt's real size (llama.cpp: "request (18735 tokens) exceeds the
available context size") proves the estimate low: every estimate is scaled up by what it proved
(``prove``) until a reply measures the context again (``measured``), so the overflow compaction and
the retry after it plan with the server's count, not the one that just failed.

``messages`` are the originals (what the file holds, what calibration pairs with usage); ``sent()`` is
what the request carries, old tool results cleared (``clearing``), and every size here is of that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
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
from pi_compact.compaction.clearing import ResultKey, result_key
from pi_compact.compaction.newest_fit import NEWEST_SHARE, fit_newest_result, newest_result_index
from pi_compact.compaction.tokens import (
    UNCALIBRATED,
    Calibration,
    ContextUsage,
    Estimator,
    context_usage,
    estimator_for,
)
from pi_compact.compaction.window import WindowPlan
from pi_compact.llm.overflow import stated_prompt_tokens
from pi_compact.llm.protocol import ChatModel
from pi_compact.messages import Message
from pi_compact.session.context import fresh_start, project_path
from pi_compact.session.entries import message_of_entry
from pi_compact.session.store import SessionStore
from pi_compact.settings import TokenEstimator

RESUME_READ = 2_000  # entries read back on opening a compacted session, for the calibration it had
SHRINK = 0.9  # a retry after an overflow of a cut request carries the result at most this share of that cut
MAX_PROVEN = 4.0  # an overflow's stated size beyond this many times the estimate is not the estimate's fault


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
        self._earlier: tuple[Pair, ...] = ()  # pairs measured on the contexts this one replaced
        self._resumed = False  # whether the pairs of the context before the file's latest compaction were read
        # What the provider counted for the system prompt and tools over their estimate, measured on the
        # session's first request (this run): tool definitions are JSON, which costs more than chars/4 says.
        self._fixed_ratio: dict[tuple[str, str] | None, float] = {}  # by model: another tokenizer, another ratio
        self.clearing = ToolClearing()  # old tool results the requests carry as stubs
        self._proven = 1.0  # what the last overflow error proved the estimates low by (``prove``)
        # The messages the last request carried (``sent_to``): an overflow's stated size is of them, the
        # newest result maybe cut, not of the whole context.
        self._last_sent: list[Message] | None = None
        # Tool results a request carried cut (``newest_fit``), as they were sent: every later request carries
        # them so, until they are cleared or compacted away, and the estimates count them so. Sent whole again
        # once no longer the newest, a cut read overflowed the window (issue 44's walks: 20,600 tokens after a
        # recall, 19,694 on the next prompt) and changed a prefix the provider had cached.
        self._cuts: dict[ResultKey, Message] = {}
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

    def sent_usage_for(self, model: ChatModel, plan: WindowPlan) -> ContextUsage:
        """``usage_for`` as the next request carries the context: with the turn's newest tool result cut
        when it must be (``sent_to``). What the status line and ``/context`` show; the triggers and the
        loop guard read ``usage_for``: a compaction can still make room for more of that result."""
        usage = self.usage_for(model, plan)
        sent = self.sent()
        fitted = self._fit(sent, usage, model)
        if fitted is sent:
            return usage
        return replace(usage, tokens=usage.tokens - self._saving(sent, fitted, model))

    def size_of(self, messages: Sequence[Message], model: ChatModel, plan: WindowPlan | None = None) -> int:
        """A context of ``messages`` as the next request to ``model`` would carry it, all estimated the one
        way the status line estimates (the compaction block's before and after, the no-gain check); with
        ``plan``, the turn's newest tool result cut as ``sent_to`` would cut it."""
        estimate = self.estimator_of(model)
        sent = self.clearing.sent(self._stick(messages))
        tokens = self.fixed(estimate, reply_key(model)) + sum(estimate(m) for m in sent)
        if plan is None:
            return tokens
        fitted = self._fit(sent, ContextUsage(tokens, plan.window, plan.threshold, False, UNCALIBRATED), model)
        return tokens - self._saving(sent, fitted, model)

    def fixed(self, estimate: Estimator, model: tuple[str, str] | None = None) -> int:
        """The system prompt, pins and tools every request carries: as the provider counted them on the
        session's first request (scaled to what they hold now), else ``overhead`` by ``estimate``."""
        if not self.calibrate:
            return round(self._proven * self.overhead(estimate))
        ratio = self._fixed_ratio.get(model)
        if ratio is None:
            counted = measured_fixed(self.messages, estimate, model)
            planned = self.overhead(self.base)
            if counted is None or planned <= 0:
                return round(self._proven * self.overhead(estimate))
            ratio = self._fixed_ratio[model] = min(MAX_FACTOR, max(MIN_FACTOR, counted / planned))
        return round(self._proven * ratio * self.overhead(self.base))

    def prove(self, reply: Mapping[str, Any], model: ChatModel) -> float:
        """``reply`` overflowed and its error states the prompt's real size: scale every estimate by what
        the estimate of that prompt missed. The prompt is what the request carried (``sent_to``: the
        newest tool result maybe cut), not the whole context: compared with the uncut context, a cut
        request's stated size proved nothing and the retry went out cut the same. The factor in force after."""
        stated = stated_prompt_tokens(str(reply.get("errorMessage") or ""))
        if stated is None:
            return self._proven
        key = reply_key(model)
        before = [m for m in self.messages if m is not reply]
        carried = self._last_sent if self._last_sent is not None and len(self._last_sent) == len(before) else before
        self._proven = 1.0
        scaled = calibrated(self.base, self.calibration(self.base, key))
        estimate = context_usage(carried, scaled, fresh_from=min(self.fresh_from, len(carried)))
        known = estimate.usage_tokens if estimate.last_usage_index is not None else 0
        estimated = estimate.tokens - known + (0 if estimate.last_usage_index is not None else self.fixed(scaled, key))
        if estimated > 0 and stated > known + estimated:
            self._proven = min(MAX_PROVEN, (stated - known) / estimated)
        return self._proven

    def measured(self) -> None:
        """A reply reported its usage: the context is measured again, nothing is left to correct."""
        self._proven = 1.0

    def _scaled(self, estimator: Estimator) -> Estimator:
        factor = self._proven
        if factor == 1.0:
            return estimator
        return lambda message: round(estimator(message) * factor)

    def reload(self, store: SessionStore) -> None:
        """Rebuild from the file (the summary, the kept tail, everything after)."""
        # The tail is all the context is made of (its projection is what ``context`` gives): a resumed
        # session's older entries stay unread.
        self._carry()
        if not self._resumed:
            self._resumed = True
            self._earlier = self._earlier or self._pairs_before_compaction(store)
        branch = store.branch_tail()
        context = project_path(branch)
        self.messages = list(context.messages)
        held = {result_key(m) for m in self.messages if m.get("role") == "toolResult"}
        self._cuts = {key: cut for key, cut in self._cuts.items() if key in held}
        self.fresh_from = fresh_start(branch, context)
        self._scan = None
        self.clearing.reload(store, len(self.messages))

    def _pairs_before_compaction(self, store: SessionStore) -> tuple[Pair, ...]:
        """On opening a compacted session: what the replies of the context its latest compaction replaced
        measured (read back from the file), as a run that made that compaction would have carried them
        over it; so ``-c`` keeps the calibration the last run had."""
        if not self.calibrate or store.compaction_count() == 0:
            return ()
        entries, _ = store.path_back(RESUME_READ)
        kinds = [entry.get("type") for entry in entries]
        latest = max((i for i, kind in enumerate(kinds) if kind == "compaction"), default=None)
        if latest is None:
            return ()
        previous = max((i for i, kind in enumerate(kinds[:latest]) if kind == "compaction"), default=-1)
        replaced = [m for m in map(message_of_entry, entries[previous + 1 : latest]) if m is not None]
        return carried_pairs((), scan(replaced, self.base), replaced)
    def add(self, message: Message) -> None:
        """``message`` was recorded: it is the newest of the context now."""
        self.messages.append(message)
        self.added += 1

    def sent(self) -> list[Message]:
        """The messages as the next request carries them: cleared tool results as their stubs, those sent
        cut as they were sent (the turn's newest is cut anew for each request: ``sent_to``)."""
        return self.clearing.sent(self._stick(self.messages))

    def _stick(self, messages: Sequence[Message], newest_too: bool = False) -> Sequence[Message]:
        """``messages`` with each tool result a request carried cut as it was sent; the turn's newest as it
        is unless ``newest_too``. ``messages`` itself when nothing was ever sent cut (the status line asks often)."""
        if not self._cuts:
            return messages
        skip = None if newest_too else newest_result_index(messages)
        return [self._cuts.get(result_key(m), m) if i != skip and m.get("role") == "toolResult" else m
                for i, m in enumerate(messages)]

    def sent_to(self, model: ChatModel, plan: WindowPlan) -> list[Message]:
        """``sent()`` for the next request to ``model``: when it would fill more than half of the room the
        threshold leaves (the answer needs the rest), the turn's newest tool result is cut so the request
        comes down to the threshold, and to at most ``NEWEST_SHARE`` of the window; on a model that reads
        prompts slowly, to that share whatever the threshold (``_fit``, ``compaction.newest_fit``)."""
        sent = self.sent()
        self._last_sent = fitted = self._fit(sent, self.usage_for(model, plan), model)
        index = newest_result_index(fitted)
        if index is not None and fitted[index] is not sent[index]:
            self._cuts[result_key(fitted[index])] = fitted[index]
        elif index is not None:
            self._cuts.pop(result_key(fitted[index]), None)  # whole this time (a compaction made the room)
        return fitted

    def shrinks_newest(self, model: ChatModel, plan: WindowPlan) -> bool:
        """Whether the next request to ``model`` would carry the turn's newest tool result at least
        ``SHRINK`` smaller than the last request did (that one overflowed: retrying it the same would
        overflow again). False when there is no such result, or it is down to ``MIN_SHOWN_TOKENS``."""
        last = self._last_sent
        then = newest_result_index(last) if last is not None else None
        if last is None or then is None:
            return False
        sent = self.sent()
        upcoming = self._fit(sent, self.usage_for(model, plan), model)
        now = newest_result_index(upcoming)
        if now is None or upcoming[now].get("toolCallId") != last[then].get("toolCallId"):
            return False
        return self.base(upcoming[now]) <= SHRINK * self.base(last[then])

    def cuts_newest(self, model: ChatModel, plan: WindowPlan) -> bool:
        """Whether the next request to ``model`` carries the turn's newest tool result cut (``sent_to``)."""
        sent = self.sent()
        return self._fit(sent, self.usage_for(model, plan), model) is not sent

    def fits_cut(self, model: ChatModel, plan: WindowPlan) -> bool:
        """Whether the context is past the threshold only for the turn's newest tool result, on a model
        that reads prompts slowly (``reading_rate``: ``sent_to`` always sends it that result cut to
        ``NEWEST_SHARE`` of the window): a compaction would make room the cut never uses, for a summary
        that costs a minute of reading (issue 44's walks: 64-75 s, then the read went out cut all the same)."""
        usage = self.usage_for(model, plan)
        if model.reading_rate is None or not usage.context_window or usage.tokens <= usage.threshold:
            return False
        sent = self.sent()
        saving = self._saving(sent, self._fit(sent, usage, model), model)
        return saving > 0 and usage.tokens - saving <= usage.threshold

    def _saving(self, sent: Sequence[Message], fitted: Sequence[Message], model: ChatModel) -> int:
        """What ``fitted`` (``sent`` with some results cut: ``_fit``) takes off ``sent``, by ``model``'s estimate."""
        estimate = self.estimator_of(model)
        return sum(estimate(whole) - estimate(cut) for whole, cut in zip(sent, fitted, strict=True) if whole is not cut)

    def _fit(self, sent: list[Message], usage: ContextUsage, model: ChatModel) -> list[Message]:
        """``sent`` itself, or a copy with the newest tool result cut: when ``usage`` passes the limit (half
        the room over the threshold), by what is over the threshold and to ``NEWEST_SHARE`` of the window;
        on a model that reads prompts slowly, to that share whenever it is bigger (a 15,000-token request
        was ten minutes of reading at 25-50 tokens a second in issue 44's fifth walk)."""
        if not usage.context_window:
            return sent
        over = usage.tokens - usage.threshold if usage.tokens > usage.threshold + \
            (usage.context_window - usage.threshold) // 2 else 0
        if not over and model.reading_rate is None:
            return sent
        fitted = fit_newest_result(sent, over, self.estimator_of(model), int(usage.context_window * NEWEST_SHARE))
        return sent if all(a is b for a, b in zip(fitted, sent, strict=True)) else fitted

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
        """``estimator`` scaled by the calibration and what an overflow proved (``estimator`` itself when
        there is neither)."""
        return self._scaled(calibrated(estimator, self.calibration(estimator, model)))

    def usage(
        self, estimator: Estimator, window: int, threshold: int, model: tuple[str, str] | None = None
    ) -> ContextUsage:
        """The last fresh provider usage plus (calibrated) estimates of what follows it, else all estimated."""
        calibration = self.calibration(estimator, model)
        scaled = self._scaled(calibrated(estimator, calibration))
        counted = self._stick(self.messages)  # results sent cut count as sent
        estimate = context_usage(counted, scaled, fresh_from=self.fresh_from)
        anchored = estimate.last_usage_index is not None  # a provider's usage counts the overhead already
        framing = anchor_framing(calibration, estimate, counted)
        tokens = estimate.tokens + framing if anchored else estimate.tokens + self.fixed(scaled, model)
        # As sent: what the anchoring usage (or the estimate) counted of results cleared since is not carried.
        tokens -= self.clearing.unsent_saving(self._as_counted(), scaled, estimate.last_usage_index)
        return ContextUsage(tokens, window, threshold, anchored, calibration)

    def _as_counted(self) -> Sequence[Message]:
        """``messages`` with each tool result as the requests carried it (cut, or a stub): what the replies
        counted, so clearing it later takes that off the anchoring usage, not its whole size (which had taken
        a context of ~5k to "~-2,933", and the toolbar of issue 44's fifth walk to "ctx 3,984" during a
        14,969-token request)."""
        return self._stick(self.messages, newest_too=True)

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
