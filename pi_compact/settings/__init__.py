"""Settings: the values and their defaults, the schema of pi's settings files, reading and reporting.

``values`` (the frozen dataclasses: every default), ``schema`` (keys, checks, pi's merge, building
``Settings``), ``files`` (the only I/O: global and project files, where each value came from) and
``report`` (rows for ``/settings``, pi's JSON layout). This package names what ``pi_compact.settings``
always named; ``pi_compact.settings_files`` and ``pi_compact.settings_report`` remain as older paths.
Importing it reads nothing: ``files`` is imported by whoever loads settings.
"""

from __future__ import annotations

from pi_compact.settings.schema import (
    KEYS,
    KEYS_BY_NAME,
    MAX_WHOLE,
    MODEL_FIELDS,
    Accepts,
    Rule,
    SettingKey,
    SettingProblem,
    check_settings,
    check_value,
    lookup,
    merge_settings,
    model_key,
    parse_settings,
    show_value,
)
from pi_compact.settings.values import CompactionSettings, ModelOverride, RetrySettings, Settings, TokenEstimator

__all__ = [
    "KEYS",
    "KEYS_BY_NAME",
    "MAX_WHOLE",
    "MODEL_FIELDS",
    "Accepts",
    "CompactionSettings",
    "ModelOverride",
    "RetrySettings",
    "Rule",
    "SettingKey",
    "SettingProblem",
    "Settings",
    "TokenEstimator",
    "check_settings",
    "check_value",
    "lookup",
    "merge_settings",
    "model_key",
    "parse_settings",
    "show_value",
]
