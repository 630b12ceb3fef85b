"""Token accounting: per-message estimates and context size from provider usage.

Two estimators, both pure and cheap:
- ``chars4`` is pi's estimate exactly: ceil(characters / 4) per message, with lengths counted in
  UTF-16 code units as JavaScript counts them and tool-call arguments as compact JSON.
- ``auto`` counts CJK characters (Han, kana, hangul, CJK punctuation, full-width forms) as about one
  token each (kana 0.93) and everything else as ``chars4``; on text without such characters it equals
  ``chars4``. A session scales its ``auto`` estimates by a ``Calibration`` learned from the usage its
  provider reports (``compaction/calibration.py``); ``chars4`` is never scaled.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.jstext import js_json, js_len
from pi_compact.messages import Message
from pi_compact.settings import TokenEstimator

# pi counts an image in a tool result or custom message as 4800 characters (1200 tokens).
IMAGE_CHARS = 4800

# Scripts whose characters a BPE tokenizer spends roughly one token on, where chars/4 under-counts
# by 60-70 %: CJK punctuation, kana, hangul, Han (incl. extensions), compatibility ideographs and
# full-width / half-width forms.
_WIDE = (
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3190-\u31ff"
    "\u3200-\u32ff\u3300-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]"
)
# Kana (hiragana, katakana, half-width katakana) cost a little less than a token each. 93 % balances
# the errors of the o200k and cl100k encodings on Japanese text: fitted on half of the samples by
# benchmarks/bench_estimator.py, within 15 % for both on the other half.
_KANA = "[\u3040-\u30ff\u31f0-\u31ff\uff65-\uff9f]"
KANA_WEIGHT_PERCENT = 93


@functools.cache
def _pattern(chars: str) -> re.Pattern[str]:
    # Compiled on first use: most sessions are ASCII and never need them (and the CLI starts faster).
    return re.compile(chars)


def _chars4(chars: int) -> int:
    return math.ceil(chars / 4)


def _count(chars: str, text: str) -> int:
    if text.isascii():
        return 0
    return len(text) - len(_pattern(chars).sub("", text))


def _wide_tokens(wide: int, kana: int) -> int:
    """Tokens for ``wide`` CJK characters of which ``kana`` are kana (integer maths, rounded up)."""
    return -((kana * KANA_WEIGHT_PERCENT + (wide - kana) * 100) // -100)


def _content_parts(content: Any, images: bool) -> tuple[list[str], int]:
    if isinstance(content, str):
        return [content], 0
    pieces: list[str] = []
    extra = 0
    # Parsed JSON gives lists and dicts: testing for those first skips the far slower ABC checks.
    if isinstance(content, (list, Sequence)):
        for block in content:
            if not isinstance(block, (dict, Mapping)):
                continue
            kind = block.get("type")
            if kind == "text":
                pieces.append(str(block.get("text") or ""))
            elif kind == "image" and images:
                extra += IMAGE_CHARS
    return pieces, extra


def _parts(message: Message) -> tuple[list[str], int]:
    """The countable parts of a message: its text pieces and a flat character surcharge (images)."""
    role = message.get("role")
    if role == "user":
        # pi 0.73.1 ignores images in user messages (0.80 started counting them).
        return _content_parts(message.get("content"), False)
    if role == "assistant":
        pieces: list[str] = []
        for block in message.get("content") or ():
            if not isinstance(block, (dict, Mapping)):
                continue
            kind = block.get("type")
            if kind == "text":
                pieces.append(str(block.get("text") or ""))
            elif kind == "thinking":
                pieces.append(str(block.get("thinking") or ""))
            elif kind == "toolCall":
                pieces.append(str(block.get("name") or ""))
                pieces.append(js_json(block.get("arguments")))
        return pieces, 0
    if role in ("custom", "toolResult"):
        return _content_parts(message.get("content"), True)
    if role == "bashExecution":
        return [str(message.get("command") or ""), str(message.get("output") or "")], 0
    if role in ("branchSummary", "compactionSummary"):
        return [str(message.get("summary") or "")], 0
    return [], 0


def estimate_tokens_chars4(message: Message) -> int:
    """pi's estimate: ceil(UTF-16 characters / 4) for one message."""
    pieces, extra = _parts(message)
    return _chars4(sum(map(js_len, pieces)) + extra)


def estimate_tokens_auto(message: Message) -> int:
    """Script-aware estimate: CJK characters ~1 token each (kana 0.93), the rest as chars/4."""
    pieces, extra = _parts(message)
    wide = sum(_count(_WIDE, piece) for piece in pieces)
    kana = sum(_count(_KANA, piece) for piece in pieces) if wide else 0
    narrow = sum(map(js_len, pieces)) - wide + extra
    return _chars4(narrow) + _wide_tokens(wide, kana)


def sample_text(message: Message, limit: int = 2_000) -> str:
    """The start of each text piece of ``message`` (at most ``limit`` characters each), joined: enough
    to tell what kind of text it is without reading a huge tool output whole."""
    pieces, _ = _parts(message)
    return "\n".join(piece[:limit] for piece in pieces)


Estimator = Callable[[Message], int]


def estimator_for(name: TokenEstimator) -> Estimator:
    """The per-message estimator a ``compaction.tokenEstimator`` value names."""
    return estimate_tokens_chars4 if name == "chars4" else estimate_tokens_auto


def estimate_text_tokens(text: str, name: TokenEstimator = "auto") -> int:
    """Estimate for a bare string (prompt sizes, request budgets)."""
    if name == "chars4":
        return _chars4(js_len(text))
    wide = _count(_WIDE, text)
    kana = _count(_KANA, text) if wide else 0
    return _chars4(js_len(text) - wide) + _wide_tokens(wide, kana)


def calculate_context_tokens(usage: Mapping[str, Any]) -> int:
    """Tokens a provider reported for a request: ``totalTokens``, or the sum of its parts when 0."""
    total = usage.get("totalTokens") or 0
    if total:
        return int(total)
    return int(
        (usage.get("input") or 0)
        + (usage.get("output") or 0)
        + (usage.get("cacheRead") or 0)
        + (usage.get("cacheWrite") or 0)
    )


def assistant_usage(message: Message) -> Mapping[str, Any] | None:
    """Usage of an assistant message, or None when it has none worth trusting (aborted / error)."""
    if message.get("role") != "assistant":
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    return usage if isinstance(usage, Mapping) else None


def last_assistant_usage(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The newest valid assistant usage among session entries, or None."""
    for entry in reversed(entries):
        if entry.get("type") == "message":
            usage = assistant_usage(entry.get("message") or {})
            if usage is not None:
                return usage
    return None


@dataclass(frozen=True)
class ContextEstimate:
    """Context size: the last valid usage plus estimates of the messages after it."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


@dataclass(frozen=True)
class Calibration:
    """How ``auto`` estimates are corrected, learned from provider usage (``compaction/calibration.py``).

    A message is estimated as ``overhead + f × estimate``, where ``f`` is ``factor`` for text (prose,
    code, tool output) and ``structured`` for JSON-like text (tool-call arguments, JSON output), which
    every BPE tokenizer spends more tokens on; ``overhead`` is what the provider adds per message (its
    chat framing). ``structured`` None means the same as ``factor``. ``replies`` counts the replies it
    was learned from; 0 means not calibrated (the estimate as it is).
    """

    factor: float = 1.0
    replies: int = 0
    overhead: float = 0.0
    structured: float | None = None

    @property
    def applied(self) -> bool:
        return self.replies > 0

    @property
    def structured_factor(self) -> float:
        return self.factor if self.structured is None else self.structured

    @property
    def uniform(self) -> bool:
        """One factor for every kind of text and nothing per message (the plain ``×f`` correction)."""
        return self.structured_factor == self.factor and not self.overhead

    def describe(self) -> str:
        """How ``/context`` and the dry run say it ("calibrated ×1.31 from 5 replies")."""
        if not self.applied:
            return "not calibrated (too few replies whose usage agrees)"
        replies = f"{self.replies} repl{'y' if self.replies == 1 else 'ies'}"
        if self.uniform:
            return f"calibrated ×{self.factor:.2f} from {replies}"
        per_message = f", +{self.overhead:.0f} tokens a message" if self.overhead else ""
        return (f"calibrated from {replies}: text ×{self.factor:.2f}, JSON-like ×{self.structured_factor:.2f}"
                f"{per_message}")


UNCALIBRATED = Calibration()


def context_usage(
    messages: Sequence[Message], estimator: Estimator = estimate_tokens_chars4, *, fresh_from: int = 0,
    count_empty_usage: bool = False,
) -> ContextEstimate:
    """The context's size: the newest usage from ``fresh_from`` on, plus estimates of what follows it.

    The one implementation of "how full is the context" (the threshold, the status line, ``/context``,
    planning). Usage before ``fresh_from`` measured a context that no longer exists (it predates the
    latest compaction, pi #1860) and is passed over. So is a usage of 0 tokens (a provider that reports
    none), unless ``count_empty_usage``. Without a usage every message is estimated.
    """
    for index in range(len(messages) - 1, fresh_from - 1, -1):
        usage = assistant_usage(messages[index])
        if usage is None:
            continue
        usage_tokens = calculate_context_tokens(usage)
        if usage_tokens > 0 or count_empty_usage:
            trailing = sum(estimator(m) for m in messages[index + 1 :])
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    total = sum(estimator(m) for m in messages)
    return ContextEstimate(total, 0, total, None)


def estimate_context_tokens(
    messages: Sequence[Message], estimator: Estimator = estimate_tokens_chars4
) -> ContextEstimate:
    """pi's estimateContextTokens: anchor on the newest valid usage (even an empty one), estimate what follows."""
    return context_usage(messages, estimator, count_empty_usage=True)


@dataclass(frozen=True)
class ContextUsage:
    """How full the context is now against a model's window, for the threshold check and the terminal."""

    tokens: int
    context_window: int
    threshold: int
    from_usage: bool  # anchored on a provider-reported usage (else all estimated)
    calibration: Calibration = UNCALIBRATED  # the factor the estimated part was scaled by

    @property
    def percent(self) -> float:
        return self.tokens / self.context_window * 100 if self.context_window else 0.0

    @property
    def tokens_left(self) -> int:
        """Tokens before auto-compaction triggers."""
        return max(0, self.threshold - self.tokens)
