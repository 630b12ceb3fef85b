"""Effective settings as a report: rows for ``/settings``, pi's nested JSON, and sanity checks.

Pure: works on a ``Settings`` value; where each value came from is ``settings_files``' business.
"""

from __future__ import annotations

from typing import Any

from pi_compact.settings import KEYS, MODEL_FIELDS, ModelOverride, SettingKey, Settings, model_key


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
    """Warnings for compaction budgets that cannot work with a model's context window (0 = unknown).

    Auto-compaction triggers above ``window - reserveTokens`` and keeps about ``keepRecentTokens``
    verbatim, so the kept part alone must fit under that threshold or every turn would compact again.
    """
    if context_window <= 0:
        return []
    reserve = settings.compaction.reserve_tokens
    keep = settings.compaction.keep_recent_tokens
    if reserve >= context_window:
        return [
            f"compaction.reserveTokens ({reserve}) is not smaller than the model's {context_window}-token "
            "context window, so auto-compaction would run before every turn; lower it."
        ]
    usable = context_window - reserve
    if keep >= usable:
        return [
            f"compaction.keepRecentTokens ({keep}) is not smaller than the {usable} tokens left by the "
            f"{context_window}-token context window minus compaction.reserveTokens ({reserve}), so "
            "compaction could not bring the context under its threshold; lower either setting."
        ]
    return []
