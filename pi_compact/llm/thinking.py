"""Thinking levels as pi has them: which a model can do, how one is clamped, what each costs (pure).

Levels are pi's: off, minimal, low, medium, high, xhigh. A model litellm does not call a reasoning
model can only do "off"; a reasoning model does minimal..high, "off" unless it always thinks (Gemini
2.5 Pro and 3, OpenAI's gpt-5 family and o-series), "xhigh" only where pi's registry maps it (Claude Opus 4.6+,
gpt-5.2+), and "minimal" not on OpenAI's o-series or gpt-5.1+ (their API refuses it). ``clamp_level``
moves a level the model cannot do to the next one up, else down (pi's ``clampThinkingLevel``) and says
whether it changed, so a caller can show one notice. ``thinking_budget`` is the token budget a level buys
on budget-based providers (Anthropic: pi's 1024/2048/8192/16384, xhigh as high; Gemini 2.5: pi's table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pi_compact.llm.protocol import ModelInfo
from pi_compact.providers import ANTHROPIC, GOOGLE

LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
DEFAULT_LEVEL = "medium"  # pi's default for a reasoning model

ANTHROPIC_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
# Gemini 2.5 budgets by model family (pi's ``getGoogleBudget``); others let the model decide (-1).
_GEMINI_BUDGETS: tuple[tuple[str, dict[str, int]], ...] = (
    ("2.5-pro", {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}),
    ("2.5-flash-lite", {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}),
    ("2.5-flash", {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}),
)
_XHIGH = re.compile(r"opus-4[-.][67]|gpt-5\.[2-9]")
# OpenAI's o-series reasons on every request too: sending no effort leaves it at the API's default (medium).
_ALWAYS_THINKS = re.compile(r"gemini-2\.5-pro|gemini-3|gpt-5|^o[1-9]")
# OpenAI's o-series (o1, o3, o3-mini, o4-mini...) takes the efforts low, medium and high, and gpt-5.1 and later
# replaced "minimal" with "none": the API refuses "minimal" for both.
_NO_MINIMAL = re.compile(r"^o[1-9]|gpt-5\.[1-9]")


@dataclass(frozen=True)
class Clamped:
    """A level after clamping; ``changed`` when it is not the one asked for."""

    level: str
    changed: bool


def supported_levels(info: ModelInfo) -> tuple[str, ...]:
    """The levels ``info``'s model can do, in pi's order."""
    if not info.reasoning:
        return ("off",)
    name = info.model_id.lower()
    return tuple(
        level for level in LEVELS
        if not (level == "off" and _ALWAYS_THINKS.search(name)) and (level != "xhigh" or _XHIGH.search(name))
        and not (level == "minimal" and _NO_MINIMAL.search(name))
    )


def clamp_level(info: ModelInfo, level: str) -> Clamped:
    """``level`` if the model can do it, else the nearest level above it it can do, else below."""
    available = supported_levels(info)
    if level in available:
        return Clamped(level, False)
    if level not in LEVELS:
        return Clamped(available[0], True)
    at = LEVELS.index(level)
    for candidate in (*LEVELS[at:], *reversed(LEVELS[:at])):
        if candidate in available:
            return Clamped(candidate, True)
    return Clamped(available[0], True)


def thinking_budget(info: ModelInfo, level: str | None) -> int:
    """Tokens of thinking ``level`` asks for on ``info``'s provider (0: off, or not budget-based)."""
    if level is None or level == "off" or level not in LEVELS:
        return 0
    family = info.api
    if family == ANTHROPIC:
        return ANTHROPIC_BUDGETS[level]
    if family == GOOGLE:
        return gemini_budget(info.model_id, level)
    return 0


def gemini_budget(model_id: str, level: str) -> int:
    """pi's Gemini budget for ``level`` (xhigh as high); 0 for models that take a level, not a budget."""
    level = "high" if level == "xhigh" else level
    for part, budgets in _GEMINI_BUDGETS:
        if part in model_id:
            return budgets.get(level, 0)
    return 0
