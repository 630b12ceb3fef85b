"""Calibration of the ``auto`` token estimate against the usage providers report (pure).

``calibrate`` measures, from pairs of consecutive replies of the model that answered last, one factor
that scales every ``auto`` estimate (``calibrated``); ``chars4`` stays pi's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.compaction.tokens import (
    UNCALIBRATED,
    Calibration,
    Estimator,
    assistant_usage,
    calculate_context_tokens,
)
from pi_compact.messages import Message

# Why: chars/4 under-counts Claude by about 30 % (and JSON by more), and no fixed weight suits every provider. One
# factor, not one per kind of text: separate least-squares factors for prose, code and JSON-like text did not estimate
# the two real Claude sessions better (whole-context error +3.7 % and -3.1 %, against -1.2 % and -2.6 % with one
# factor). A window of 200 replies did better than 20 or 50 on them (``benchmarks/bench_calibration.py --max-pairs
# N``). A valid pair whose ratio lies outside [MIN_RATIO, MAX_RATIO] is an outlier (a provider that dropped earlier
# thinking from the history, or usage that does not track the text at all); the factor applies once MIN_PAIRS pairs
# remain holding at least KEEP_SHARE of the estimated tokens of all valid pairs (else the usage disagrees with
# itself), clamped to [MIN_FACTOR, MAX_FACTOR].
MIN_PAIRS = 2
MAX_PAIRS = 200
MIN_RATIO, MAX_RATIO = 0.25, 4.0
MIN_FACTOR, MAX_FACTOR = 0.5, 2.5
KEEP_SHARE = 0.5


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
    for index in range(state.end, len(messages)):
        message = messages[index]
        if message.get("role") != "assistant":
            if anchor is not None:
                since_anchor += estimator(message)
            continue
        reply = _reply(message)
        if reply is None:
            anchor = None  # an aborted or failed reply breaks the chain
            continue
        key = (str(message.get("provider") or ""), str(message.get("model") or ""))
        if anchor is not None and key == model and (anchor < fresh_from) == (index < fresh_from):
            pairs.append(Pair(reply[0] - anchor_total, since_anchor, key, index))
            del pairs[:-MAX_PAIRS]
        anchor, model, anchor_total, since_anchor = index, key, reply[1], 0
    return Scan(tuple(pairs), len(messages), anchor, model, anchor_total, since_anchor)


def fit(pairs: Sequence[Pair], model: tuple[str, str] | None = None) -> Calibration:
    """The factor the pairs of ``model`` (every model when None) agree on."""
    same = [p for p in pairs if model is None or p.model == model]
    kept = [p for p in same if p.estimated > 0 and MIN_RATIO * p.estimated <= p.reported <= MAX_RATIO * p.estimated]
    weight = sum(p.estimated for p in kept)
    if len(kept) < MIN_PAIRS or weight < KEEP_SHARE * sum(max(0, p.estimated) for p in same):
        return UNCALIBRATED
    factor = sum(p.reported for p in kept) / weight
    return Calibration(min(MAX_FACTOR, max(MIN_FACTOR, factor)), len(kept))


def calibrate(messages: Sequence[Message], estimator: Estimator, *, fresh_from: int = 0) -> Calibration:
    """The calibration ``messages`` (a context, ``fresh_from`` its first message since the latest
    compaction) give for ``estimator``, from the replies of the model that answered last."""
    return calibration_of(scan(messages, estimator, fresh_from=fresh_from), messages)


def calibration_of(
    found: Scan, messages: Sequence[Message], model: tuple[str, str] | None = None
) -> Calibration:
    """The calibration of a scan of ``messages``: its pairs inside the window, of ``model`` (the model
    the next request goes to, as (provider, model id)) or else of the newest good reply's model. A scan
    from nothing and one carried on message by message give the same."""
    start = window_start(messages)
    # A pair ending at the window's first reply started before it: a scan from nothing never sees it.
    return fit([p for p in found.pairs if p.index > start], model or found.model)


def calibrated(estimator: Estimator, calibration: Calibration) -> Estimator:
    """``estimator`` scaled by ``calibration`` (``estimator`` itself when nothing was learned)."""
    if not calibration.applied or calibration.factor == 1.0:
        return estimator
    factor = calibration.factor

    def estimate(message: Mapping[str, Any]) -> int:
        return round(estimator(message) * factor)

    return estimate


__all__ = [
    "MAX_PAIRS", "MIN_PAIRS", "Calibration", "Pair", "Scan", "calibrate", "calibrated", "calibration_of", "fit", "scan",
    "window_start",
]
