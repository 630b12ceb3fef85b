"""Settings: frozen values with pi's defaults, the schema of pi's settings files, reading and reporting.

Importing the package reads nothing; ``settings.files`` is the only module that touches the disk.
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
