"""Calibration of the ``auto`` token estimate against the usage providers report (pure).

``calibrate`` learns, from pairs of consecutive replies of the model that answered last, how the
provider counts what we estimate (``Calibration``): a factor for text, one for JSON-like text, and a
cost per message; ``calibrated`` applies it to every ``auto`` estimate. ``chars4`` stays pi's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.compaction.tokens import (
    UNCALIBRATED,
    Calibration,
    ContextEstimate,
    Estimator,
    assistant_usage,
    calculate_context_tokens,
    sample_text,
)
from pi_compact.messages import Message

# Why: chars/4 under-counts Claude by about 30 % (and JSON by more), and no fixed weight suits every provider. A
# window of 200 replies did better than 20 or 50 on two real Claude sessions (``benchmarks/bench_calibration.py
# --max-pairs N``). A valid pair whose ratio lies outside [MIN_RATIO, MAX_RATIO] (after MAX_OVERHEAD tokens a
# message) is an outlier (a provider that dropped earlier thinking from the history, or usage that does not track
# the text at all); the calibration applies once MIN_PAIRS pairs remain holding at least KEEP_SHARE of the
# estimated tokens of all valid pairs (else the usage disagrees with itself); factors are clamped to
# [MIN_FACTOR, MAX_FACTOR].
MIN_PAIRS = 2
MAX_PAIRS = 200
MIN_RATIO, MAX_RATIO = 0.25, 4.0
MIN_FACTOR, MAX_FACTOR = 0.5, 2.5
KEEP_SHARE = 0.5
# Issue 35: one factor learned from many tiny tool results (×1.7) and applied to a large plain-text file doubled
# its estimate. A small message costs mostly its chat framing (a few tokens a message, whatever it says), so a
# factor learned on small messages says nothing about big text. Pairs whose messages average under TINY estimated
# tokens teach only the cost per message (at most MAX_OVERHEAD); the factors come from the bigger pairs alone, and
# a factor nothing taught stays 1, the estimate as it is (JSON-like text: at least the text factor; other text: at
# most the JSON-like one).
TINY = 64
MAX_OVERHEAD = 40.0
# Text is JSON-like when at least STRUCTURED_SHARE of its characters (of a sample of each piece) are neither
# letters, digits nor white space: JSON and tool-call arguments ~0.20, source code ~0.11, prose ~0.06 (median of
# the corpus of ``benchmarks/calibration_sessions.py``). Real tokenizers spend ~1.3-1.4× chars/4 on the first and
# ~0.9-1.0× on the others (o200k and Claude-like, same corpus), so the two kinds get factors of their own.
STRUCTURED_SHARE = 0.15
_SYMBOLS = re.compile(r"[^\w\s]")


def is_structured(message: Message) -> bool:
    """Whether ``message`` is JSON-like text (mostly punctuation between short words), by its content.

    A digest (``digest.py``) says it once estimated (from the whole message), else its serialized text
    tells; so estimate a message before asking this of it."""
    known = getattr(message, "structured", None)
    if isinstance(known, bool):
        return known
    text = getattr(message, "text", None)
    sample = text[:4_000] if isinstance(text, str) else sample_text(message)
    if not sample:
        return False
    symbols = len(sample) - len(_SYMBOLS.sub("", sample))
    return symbols >= STRUCTURED_SHARE * len(sample)


# Each two consecutive replies measure the error for free: the threshold estimate anchors on the total usage of reply
# k (its input and output) and estimates the messages after it, and the provider then reports the input of reply k+1.
# So ``prompt(k+1) - total(k)`` tokens is what the provider counted for the messages between the two replies, where we
# estimated ``estimated``: one pair.
@dataclass(frozen=True)
class Pair:
    """What the provider counted for the messages between two replies, and what we estimated."""

    reported: int
    estimated: int
    model: tuple[str, str]  # (provider, model) of both replies
    index: int  # where the later reply is in the messages
    messages: int = 1  # how many messages the provider framed: those estimated, and the earlier reply
    structured: int = 0  # the part of ``estimated`` in JSON-like messages

    @property
    def tiny(self) -> bool:
        """Messages so small that their framing, not their text, decides what they cost."""
        return self.estimated < TINY * self.messages

    @property
    def kind_structured(self) -> bool:
        """Most of what was estimated is JSON-like."""
        return 2 * self.structured > self.estimated


@dataclass(frozen=True)
class Scan:
    """The pairs found in ``messages[:end]`` (newest last, at most ``MAX_PAIRS``), and where a scan of
    more messages goes on from: the newest good reply (``anchor``), its model and total, and the estimate
    of the messages after it. A scan from nothing starts at ``window_start``."""

    pairs: tuple[Pair, ...] = ()
    end: int = 0
    anchor: int | None = None
    model: tuple[str, str] | None = None  # the model of the newest good reply
    anchor_total: int = 0
    since_anchor: int = 0
    since_structured: int = 0  # the JSON-like part of ``since_anchor``
    since_count: int = 0  # messages estimated since the anchor


def _reply(message: Message) -> tuple[int, int] | None:
    """(prompt tokens, total tokens) of a good reply, or None (aborted, failed, no usage)."""
    usage = assistant_usage(message)
    if usage is None:
        return None
    try:
        total = calculate_context_tokens(usage)
        prompt = total - int(usage.get("output") or 0)
    except (TypeError, ValueError, OverflowError):
        return None  # a malformed usage in an old reply is no measurement (and no reason to fail)
    return (prompt, total) if prompt > 0 else None


def window_start(messages: Sequence[Message]) -> int:
    """Where the pairs that count begin: the reply ``MAX_PAIRS`` replies before the newest (so a long
    session is never estimated in full, and the factor follows what the session does lately)."""
    replies = 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            replies += 1
            if replies > MAX_PAIRS:
                return index
    return 0


# A pair is not valid (the chain restarts at the next good reply):
# - when a reply between or at either end was aborted or failed, or reports no usage;
# - when the two replies come from different models (another tokenizer);
# - across a compaction (``fresh_from``: the later reply measured a different context). Only the newest MAX_PAIRS + 1
#   replies are read (``window_start``): the recent mix of text, and a bounded cost on a long session.
def scan(
    messages: Sequence[Message], estimator: Estimator, *, fresh_from: int = 0, since: Scan | None = None
) -> Scan:
    """The pairs of ``messages``; ``since`` is an earlier scan of the same messages, when only more
    were appended (with the same ``estimator`` and ``fresh_from``)."""
    state = since if since is not None and since.end <= len(messages) else Scan(end=window_start(messages))
    pairs = list(state.pairs)
    anchor, model, anchor_total, since_anchor = state.anchor, state.model, state.anchor_total, state.since_anchor
    since_structured, since_count = state.since_structured, state.since_count
    for index in range(state.end, len(messages)):
        message = messages[index]
        if message.get("role") != "assistant":
            if anchor is not None:
                tokens = estimator(message)
                since_anchor += tokens
                since_structured += tokens if is_structured(message) else 0
                since_count += 1
            continue
        reply = _reply(message)
        if reply is None:
            anchor = None  # an aborted or failed reply breaks the chain
            continue
        key = (str(message.get("provider") or ""), str(message.get("model") or ""))
        if anchor is not None and key == model and (anchor < fresh_from) == (index < fresh_from):
            # The earlier reply is framed again in the later prompt: one more message than was estimated.
            pairs.append(Pair(reply[0] - anchor_total, since_anchor, key, index, since_count + 1, since_structured))
            del pairs[:-MAX_PAIRS]
        anchor, model, anchor_total, since_anchor, since_structured, since_count = index, key, reply[1], 0, 0, 0
    return Scan(tuple(pairs), len(messages), anchor, model, anchor_total, since_anchor, since_structured, since_count)


def _clamp(factor: float) -> float:
    return min(MAX_FACTOR, max(MIN_FACTOR, factor))


def _factor(pairs: Sequence[Pair], overhead: float) -> float | None:
    """What the provider counted over what we estimated, token-weighted, once the framing is taken off."""
    estimated = sum(p.estimated for p in pairs)
    return _clamp(sum(p.reported - overhead * p.messages for p in pairs) / estimated) if estimated else None


def fit(pairs: Sequence[Pair], model: tuple[str, str] | None = None) -> Calibration:
    """The calibration the pairs of ``model`` (every model when None) agree on."""
    same = [p for p in pairs if model is None or p.model == model]
    kept = [p for p in same if p.estimated > 0
            and MIN_RATIO * p.estimated <= p.reported <= MAX_RATIO * p.estimated + MAX_OVERHEAD * p.messages]
    weight = sum(p.estimated for p in kept)
    if len(kept) < MIN_PAIRS or weight < KEEP_SHARE * sum(max(0, p.estimated) for p in same):
        return UNCALIBRATED
    big = [p for p in kept if not p.tiny]
    tiny = [p for p in kept if p.tiny]
    text, structured, overhead = 1.0, 1.0, 0.0
    # Twice: the framing the tiny pairs show is taken off the big ones, whose factors then price the tiny
    # ones' text. Every BPE tokenizer spends more on JSON-like text than on other text, so a kind that
    # no big pair taught stays 1 unless the other kind's factor says otherwise on the right side.
    for _ in range(2):
        learned_text = _factor([p for p in big if not p.kind_structured], overhead)
        learned_structured = _factor([p for p in big if p.kind_structured], overhead)
        text = learned_text if learned_text is not None else min(1.0, learned_structured or 1.0)
        structured = learned_structured if learned_structured is not None else max(1.0, text)
        if tiny:
            framed = sum(p.reported - text * (p.estimated - p.structured) - structured * p.structured for p in tiny)
            overhead = min(MAX_OVERHEAD, max(0.0, framed / sum(p.messages for p in tiny)))
    return Calibration(text, len(kept), round(overhead, 2), None if structured == text else structured)


def calibrate(messages: Sequence[Message], estimator: Estimator, *, fresh_from: int = 0) -> Calibration:
    """The calibration ``messages`` (a context, ``fresh_from`` its first message since the latest
    compaction) give for ``estimator``, from the replies of the model that answered last."""
    return calibration_of(scan(messages, estimator, fresh_from=fresh_from), messages)


def calibration_of(
    found: Scan, messages: Sequence[Message], model: tuple[str, str] | None = None, earlier: Sequence[Pair] = (),
) -> Calibration:
    """The calibration of a scan of ``messages``: its pairs inside the window, of ``model`` (the model
    the next request goes to, as (provider, model id)) or else of the newest good reply's model. A scan
    from nothing and one carried on message by message give the same. ``earlier``: pairs measured on
    contexts this one replaced (before a compaction), older than every pair of the scan."""
    start = window_start(messages)
    # A pair ending at the window's first reply started before it: a scan from nothing never sees it.
    inside = [p for p in found.pairs if p.index > start]
    return fit([*earlier, *inside][-MAX_PAIRS:], model or found.model)


def carried_pairs(earlier: Sequence[Pair], found: Scan, messages: Sequence[Message]) -> tuple[Pair, ...]:
    """The pairs a context about to be replaced hands on (``earlier`` and those of its scan ``found``),
    newest last, at most ``MAX_PAIRS``: what the provider measured stays true of its tokenizer after a
    compaction, so the figure after it is calibrated as the one before."""
    start = window_start(messages)
    return (*earlier, *(p for p in found.pairs if p.index > start))[-MAX_PAIRS:]


def without_repeats(earlier: Sequence[Pair], found: Scan) -> tuple[Pair, ...]:
    """``earlier`` less the pairs ``found`` measured again (a kept tail is scanned anew after a compaction)."""
    again = {_key(p) for p in found.pairs}
    return tuple(p for p in earlier if _key(p) not in again)


def _key(pair: Pair) -> tuple[Any, ...]:
    return (pair.reported, pair.estimated, pair.messages, pair.structured, pair.model)


def calibrated(estimator: Estimator, calibration: Calibration) -> Estimator:
    """``estimator`` corrected by ``calibration`` (``estimator`` itself when nothing was learned)."""
    if not calibration.applied or (calibration.uniform and calibration.factor == 1.0):
        return estimator
    text, structured, overhead = calibration.factor, calibration.structured_factor, calibration.overhead
    if structured == text:
        def estimate(message: Mapping[str, Any]) -> int:
            return round(overhead + estimator(message) * text)
        return estimate

    def estimate_by_kind(message: Mapping[str, Any]) -> int:
        tokens = estimator(message)  # first: a digest learns its kind as it is estimated
        return round(overhead + tokens * (structured if is_structured(message) else text))

    return estimate_by_kind


def measured_fixed(messages: Sequence[Message], estimator: Estimator, model: tuple[str, str] | None) -> int | None:
    """What the provider counted besides the messages (system prompt, tools) on the first request of a
    session: the first reply's prompt less the estimate of the messages before it (only user text).
    None when ``messages`` do not start a session that way, or that reply is another model's."""
    for index, message in enumerate(messages):
        if message.get("role") == "compactionSummary":
            return None
        if message.get("role") != "assistant":
            continue
        reply = _reply(message)
        key = (str(message.get("provider") or ""), str(message.get("model") or ""))
        if reply is None or (model is not None and key != model):
            return None
        return reply[0] - sum(map(estimator, messages[:index]))
    return None


def anchor_framing(calibration: Calibration, estimate: ContextEstimate, messages: Sequence[Message]) -> int:
    """The framing of the reply whose usage anchors ``estimate``, which the next request carries again
    (as a pair measures it): nothing when all is estimated or nothing follows that reply."""
    index = estimate.last_usage_index
    if index is None or index >= len(messages) - 1 or not calibration.applied:
        return 0
    return round(calibration.overhead)


__all__ = [
    "MAX_PAIRS", "MIN_PAIRS", "Calibration", "Pair", "Scan", "anchor_framing", "calibrate", "calibrated",
    "calibration_of", "carried_pairs", "fit", "is_structured", "measured_fixed", "scan", "window_start",
    "without_repeats",
]
