"""Older import path of ``pi_compact.settings.report`` and of the window checks, now in
``pi_compact.compaction.threshold`` beside ``should_compact``; same objects."""

from __future__ import annotations

from pi_compact.compaction.threshold import fit_to_window, validate_against_window
from pi_compact.settings.report import effective_value, settings_as_json, settings_items

__all__ = ["effective_value", "fit_to_window", "settings_as_json", "settings_items", "validate_against_window"]
