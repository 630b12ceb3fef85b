"""Effective settings as a report: rows for ``/settings`` and pi's nested JSON layout.

Pure: works on a ``Settings`` value; where each value came from is ``settings.files``' business,
and whether the compaction budgets fit a model's window is ``compaction.threshold``'s.
"""

from __future__ import annotations

from typing import Any

from pi_compact.settings.schema import KEYS, MODEL_FIELDS, SettingKey, model_key
from pi_compact.settings.values import ModelOverride, Settings


def effective_value(settings: Settings, key: SettingKey) -> Any:
    """The value ``settings`` holds for ``key``."""
    value: Any = settings
    for attr in key.attr.split("."):
        value = getattr(value, attr)
    return value


def _model_json(override: ModelOverride) -> dict[str, Any]:
    values = {json_name: getattr(override, attr) for json_name, attr, _rule in MODEL_FIELDS}
    # Lists as JSON has them; an unset field (None, or no texts) is left out.
    return {name: list(value) if isinstance(value, tuple) else value
            for name, value in values.items() if value is not None and value != ()}


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
