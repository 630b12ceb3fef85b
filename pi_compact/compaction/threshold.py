"""When auto-compaction triggers, and compaction budgets that can work with a model's window (pure).

The threshold is ``window - reserveTokens``: past it, compaction runs. ``fit_to_window`` keeps that
rule meaningful for any window: a reserve that does not leave room (for what every request carries
and some conversation), or a kept tail that does not fit under the threshold, is replaced (with a
warning naming the key and where it was set).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pi_compact.compaction.budgets import Budgets
from pi_compact.settings import CompactionSettings, Settings


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """True when auto-compaction is on and the context is strictly past ``window - reserveTokens``."""
    return Budgets.of(settings, context_window).past(context_tokens)


def _named(key: str, value: int, sources: Mapping[str, str] | None) -> str:
    """``key (value)`` plus where the value came from: a settings file or the command line."""
    source = (sources or {}).get(key)
    if source == "CLI flag":
        return f"{key} ({value}, from the command line)"
    return f"{key} ({value})" + (f" in {source}" if source else "")


# Issue 35: reserveTokens 16,000 on a 16,384 window left a 384-token threshold, under the ~1,750 tokens of system
# prompt and tools every request carries: auto-compaction before every turn, and a diagnosis that blamed
# keepRecentTokens. The threshold must leave at least this share of the window to the conversation, past what
# every request carries (when the caller knows it: ``fixed_tokens``).
MIN_CONVERSATION_SHARE = 8  # 1/8 of the window


def fit_to_window(
    settings: Settings, context_window: int, *, model: str | None = None, sources: Mapping[str, str] | None = None,
    fixed_tokens: int = 0,
) -> tuple[Settings, list[str]]:
    """``settings`` with compaction budgets that work with ``context_window`` (0 = unknown), and a warning
    naming the key and its source for each value the user set that had to be replaced.

    Auto-compaction triggers above ``window - reserveTokens`` and keeps about ``keepRecentTokens``
    verbatim, so a reserve that is not smaller than the window would make the threshold negative
    (compact before every turn) and a kept part that does not fit under the threshold would make
    compaction useless. Such a reserve becomes a quarter of the window (at most the default), such a
    keep half of what the reserve leaves. A reserve that leaves less than an eighth of the window to the
    conversation, past the ``fixed_tokens`` every request carries (system prompt and tools, when known),
    is replaced the same way. A default (``sources`` says "default", or a file sets the default value) is
fitted silently:
    it is ours to fit to a small window, and a warning on every run could only be silenced by setting it.
    """
    if context_window <= 0:
        return settings, []
    compaction = settings.compaction
    reserve, keep = compaction.reserve_tokens, compaction.keep_recent_tokens
    window = f"{context_window}-token context window" + (f" of {model}" if model else "")
    warnings: list[str] = []

    defaults = CompactionSettings()
    chosen = {"compaction.reserveTokens": reserve != defaults.reserve_tokens,
              "compaction.keepRecentTokens": keep != defaults.keep_recent_tokens}

    def warn(key: str, text: str) -> None:
        # A default is ours to fit, also when a file writes it out (settings.example.json lists every default).
        if (sources or {}).get(key) != "default" and chosen[key]:
            warnings.append(text)

    if reserve >= context_window:
        fitted = min(CompactionSettings().reserve_tokens, context_window // 4)
        warn("compaction.reserveTokens",
             f"{_named('compaction.reserveTokens', reserve, sources)} is not smaller than the {window}, so "
             f"auto-compaction would run before every turn; using {fitted} instead.")
        reserve = fitted
    elif (threshold := Budgets(context_window, reserve, keep).threshold) < \
            fixed_tokens + context_window // MIN_CONVERSATION_SHARE:
        fitted = min(CompactionSettings().reserve_tokens, context_window // 4)
        if fitted < reserve:  # a smaller reserve: a higher threshold
            carried = f", less than the ~{fixed_tokens:,} tokens every request carries (system prompt and tools) " \
                f"plus room for the conversation" if fixed_tokens else ", too little room for the conversation"
            warn("compaction.reserveTokens",
                 f"{_named('compaction.reserveTokens', reserve, sources)} leaves an auto-compaction threshold of "
                 f"{threshold} tokens on the {window}{carried}, so auto-compaction would run before "
                 f"every turn; using {fitted} instead.")
            reserve = fitted
    usable = Budgets(context_window, reserve, keep).threshold
    if keep >= usable:
        fitted = max(1, usable // 2)
        warn("compaction.keepRecentTokens",
             f"{_named('compaction.keepRecentTokens', keep, sources)} is not smaller than the {usable} tokens "
             f"left by the {window} minus compaction.reserveTokens ({reserve}), so compaction could not bring "
             f"the context under its threshold; using {fitted} instead.")
        keep = fitted
    if (reserve, keep) == (compaction.reserve_tokens, compaction.keep_recent_tokens):
        return settings, []
    return replace(settings, compaction=replace(compaction, reserve_tokens=reserve, keep_recent_tokens=keep)), warnings


def validate_against_window(settings: Settings, context_window: int, fixed_tokens: int = 0) -> list[str]:
    """Warnings for compaction budgets that cannot work with a model's context window (0 = unknown)."""
    return fit_to_window(settings, context_window, fixed_tokens=fixed_tokens)[1]


__all__ = ["MIN_CONVERSATION_SHARE", "fit_to_window", "should_compact", "validate_against_window"]
