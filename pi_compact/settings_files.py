"""Older import path of ``pi_compact.settings.files`` (reading the settings files); same objects."""

from __future__ import annotations

from pi_compact.settings.files import (
    CLI_SOURCE,
    DEFAULT_SOURCE,
    LoadedSettings,
    describe,
    load_settings,
    read_settings_file,
)

__all__ = ["CLI_SOURCE", "DEFAULT_SOURCE", "LoadedSettings", "describe", "load_settings", "read_settings_file"]
