"""Effective settings as a report: rows for ``/settings``, pi's nested JSON, and sanity checks.

Pure: works on a ``Settings`` value; where each value came from is ``settings_files``' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pi_compact.settings import (
    KEYS,
    MODEL_FIELDS,
    CompactionSettings,
    ModelOverride,
    SettingKey,
    Settings,
    model_key,
)


def effective_value(settings: Settings, key: SettingKey) -> Any:
    """The value ``settings`` holds for ``key``."""
    value: Any = settings
    for attr in key.attr.split("."):
        value = getattr(value, attr)
    return value


def _model_json(override: ModelOverride) -> dict[str, Any]:
    return {
        json_name: getattr(override, attr)
        for json_name, attr, _rule in MODEL_FIELDS
        if getattr(override, attr) is not None
    }


def settings_items(settings: Settings) -> list[tuple[str, Any]]:
    """Every effective key as (dotted key, value), in a stable order: ``KEYS`` order, then models by name.

    With no models configured a single ``("models", {})`` row stands for the empty map.
    """
    items: list[tuple[str, Any]] = [(key.dotted, effective_value(settings, key)) for key in KEYS]
    if not settings.models:
        items.append(("models", {}))
    for name, override in sorted(settings.models, key=lambda item: item[0]):
        items.append((model_key(name), _model_json(override)))
    return items


def settings_as_json(settings: Settings) -> dict[str, Any]:
    """The settings in pi's nested camelCase layout (unset optional strings become null)."""
    tree: dict[str, Any] = {}
    for key in KEYS:
        node = tree
        for part in key.path[:-1]:
            node = node.setdefault(part, {})
        node[key.path[-1]] = effective_value(settings, key)
    tree["models"] = {name: _model_json(override) for name, override in settings.models}
    return tree


def validate_against_window(settings: Settings, context_window: int) -> list[str]:
    """Warnings for compaction budgets that cannot work with a model's context window (0 = unknown)."""
    return fit_to_window(settings, context_window)[1]


def _named(key: str, value: int, sources: Mapping[str, str] | None) -> str:
    """``key (value)`` plus where the value came from: a settings file or the command line."""
    source = (sources or {}).get(key)
    if source == "CLI flag":
        return f"{key} ({value}, from the command line)"
    return f"{key} ({value})" + (f" in {source}" if source else "")


def fit_to_window(
    settings: Settings, context_window: int, *, model: str | None = None, sources: Mapping[str, str] | None = None,
) -> tuple[Settings, list[str]]:
    """``settings`` with compaction budgets that work with ``context_window`` (0 = unknown), and a warning
    naming the key and its source for each value the user set that had to be replaced.

    Auto-compaction triggers above ``window - reserveTokens`` and keeps about ``keepRecentTokens``
    verbatim, so a reserve that is not smaller than the window would make the threshold negative
    (compact before every turn) and a kept part that does not fit under the threshold would make
    compaction useless. Such a reserve becomes a quarter of the window (at most the default), such a
    keep half of what the reserve leaves. A default (``sources`` says "default") is fitted silently:
    it is ours to fit to a small window, and a warning on every run could only be silenced by setting it.
    """
    if context_window <= 0:
        return settings, []
    compaction = settings.compaction
    reserve, keep = compaction.reserve_tokens, compaction.keep_recent_tokens
    window = f"{context_window}-token context window" + (f" of {model}" if model else "")
    warnings: list[str] = []

    def warn(key: str, text: str) -> None:
        if (sources or {}).get(key) != "default":
            warnings.append(text)

    if reserve >= context_window:
        fitted = min(CompactionSettings().reserve_tokens, context_window // 4)
        warn("compaction.reserveTokens",
             f"{_named('compaction.reserveTokens', reserve, sources)} is not smaller than the {window}, so "
             f"auto-compaction would run before every turn; using {fitted} instead.")
        reserve = fitted
    usable = context_window - reserve
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
