"""Why a compaction runs, and every word said about it: one row per reason (pure, no imports above).

``CompactionReason`` names the reasons; ``REASONS`` holds, for each, what the spinner says, how a
failure and a cancel start, the advice after a failure, and whether it was automatic. ``SKIP_TEXT``
is the one wording of "nothing to compact". Adding a trigger adds a row here and a rule in
``triggers.py``; the pipeline, the terminal and print mode read the row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pi_compact.agent.events import CompactionReason

if TYPE_CHECKING:  # a Literal only: the events (and the terminal) stay importable without the planner
    from pi_compact.compaction.plan import SkipReason



@dataclass(frozen=True)
class ReasonWords:
    """What is said about a compaction run for one reason."""

    name: str  # the subject of its sentences: "Auto-compaction failed: ...", "... cancelled; ..."
    spinner: str  # the status line while it runs; ``{percent}`` is how full the context was
    advice: str  # after a failure in the terminal (a missing key needs none: its message says which)
    automatic: bool = True  # False only for /compact: reports a skip, is not the loop guard's business

    @property
    def failure(self) -> str:
        return f"{self.name} failed"

    @property
    def cancelled(self) -> str:
        return f"{self.name} cancelled; nothing was written."

    def failed(self, message: str) -> str:
        return f"{self.failure}: {message}"

    def fell_back(self, error: str | None) -> str:
        """Said wherever a compaction's summary was built without the model (every mode says it)."""
        return f"{self.name}: the summary was built without the model ({error or 'the model failed'})."

    @property
    def shows_percent(self) -> bool:
        return "{percent}" in self.spinner

    def label(self, percent: float | None) -> str:
        return self.spinner.format(percent=f"{percent:.0f}" if percent is not None else "?")


_RETRY_ADVICE = "Check the model settings (/model, /settings) and run /compact again."

REASONS: dict[CompactionReason, ReasonWords] = {
    "manual": ReasonWords("Compaction", "Compacting context…", _RETRY_ADVICE, automatic=False),
    "threshold": ReasonWords("Auto-compaction", "Auto-compacting (context {percent}% full)…", _RETRY_ADVICE),
    "overflow": ReasonWords(
        "Context overflow recovery", "Context overflow — compacting and retrying…",
        "Try /compact with instructions, /new, or a model with a larger window.",
    ),
}

# How a compaction with nothing to summarize ends (manual ones say it; automatic ones stay silent).
SKIP_TEXT: dict[SkipReason, str] = {
    "no_messages": "Nothing to compact (no messages yet).",
    "already_compacted": "Already compacted: the session ends with a compaction.",
    "too_small": "Nothing to compact (session too small).",
}

def too_small_text(tokens: int, keep: int, counted: int | None = None, hint: str = "/compact --keep") -> str:
    """Why there is nothing to compact when the kept recent messages hold the whole conversation, and
    how to compact anyway (a smaller keep for this one compaction: ``hint`` is the terminal's command, or
    ``pi-compact compact``'s flag). ``tokens`` is the session's estimate (as ``/context`` counts);
    ``counted`` what the cut compared with ``keep``, when it differs. More than ``keep`` counted with nothing
    to compact means the first message and its tool results fill the keep: no smaller keep would help."""
    counted = tokens if counted is None else counted
    if counted > keep:
        return (f"Nothing to compact: the conversation (~{tokens:,} tokens) starts with a message that, with its "
                f"tool results, holds more than keepRecentTokens ({keep:,}), and a cut never separates a message "
                "from its tool results. The next messages make it compactable.")
    smaller = 1000 if counted > 2000 else max(100, counted // 2 // 100 * 100)
    # The cut counts uncalibrated: say both figures rather than a "fits" the calibrated one contradicts.
    cut = f"; ~{counted:,} as the cut counts them, uncalibrated" if counted != tokens else ""
    return (f"Nothing to compact: the whole conversation (~{tokens:,} tokens{cut}) fits in the recent messages "
            f"kept word for word (keepRecentTokens {keep:,}). To compact now, keep less: {hint} {smaller}.")


def too_big_message_text(description: str, window: int, model: str) -> str:
    """Said when the provider overflows with nothing to compact because one message alone (``description``:
    what it is, its entry and its size) is larger than the context window: a smaller window would not help."""
    return (f"The provider reports a context overflow and there is nothing to compact: the {description} alone is "
            f"larger than the {window:,}-token context window of {model}. Start a /new session, or ask for a "
            "smaller output next time (e.g. head or grep instead of cat).")


# Said when an overflow is back right after its one compact-and-retry.
OVERFLOW_GIVE_UP = (
    "Context overflow recovery failed after one compact-and-retry attempt. Reduce the context "
    "(e.g. /compact with instructions, or start a /new session) or switch to a model with a larger window."
)


def words(reason: CompactionReason) -> ReasonWords:
    return REASONS[reason]


def model_answered(details: Mapping[str, Any]) -> bool:
    """Whether the summary model answered (its recorded usage has output) although the summary was built
    without it: then its answer was unusable, and calling the model failed sends the user after the wrong
    cause."""
    usage = details.get("usage")
    if not isinstance(usage, Mapping):
        return False
    output = usage.get("output")
    return isinstance(output, (int, float)) and output > 0


def fallback_text(reason: CompactionReason, result: Mapping[str, Any] | None) -> str | None:
    """What to say about a finished compaction (a ``compaction_end`` result) that fell back; None if it did not."""
    details = (result or {}).get("details")
    if not isinstance(details, Mapping) or not details.get("fallback"):
        return None
    error = details.get("error")
    return words(reason).fell_back(error if isinstance(error, str) else None)

def cut_again_text(stated: int | None) -> str:
    """Said when an overflow is retried with less of the turn's newest tool result (no compaction): ``stated``
    is the prompt size the provider's error gave."""
    counted = f" (the provider counted {stated:,} tokens)" if stated is not None else ""
    return f"Context overflow{counted}: retrying with less of the newest tool result, cut to fit."


__all__ = ["OVERFLOW_GIVE_UP", "REASONS", "SKIP_TEXT", "CompactionReason", "ReasonWords", "fallback_text",
           "cut_again_text", "model_answered", "too_big_message_text", "too_small_text", "words"]
