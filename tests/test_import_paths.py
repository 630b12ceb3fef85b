"""Code that moved in issue 14 is still importable from where it used to live: the same objects."""

from __future__ import annotations

import importlib

import pytest

MOVED = [
    ("pi_compact.settings_files", "load_settings", "pi_compact.settings.files"),
    ("pi_compact.settings_files", "LoadedSettings", "pi_compact.settings.files"),
    ("pi_compact.settings_files", "read_settings_file", "pi_compact.settings.files"),
    ("pi_compact.settings_report", "settings_items", "pi_compact.settings.report"),
    ("pi_compact.settings_report", "fit_to_window", "pi_compact.compaction.threshold"),
    ("pi_compact.settings_report", "validate_against_window", "pi_compact.compaction.threshold"),
    ("pi_compact.settings", "Settings", "pi_compact.settings.values"),
    ("pi_compact.settings", "parse_settings", "pi_compact.settings.schema"),
    ("pi_compact.compaction.tokens", "should_compact", "pi_compact.compaction.threshold"),
    ("pi_compact.llm.protocol", "CancelToken", "pi_compact.cancel"),
    ("pi_compact.llm.protocol", "now_ms", "pi_compact.clock"),
    ("pi_compact.commands.compact", "CompactOptions", "pi_compact.commands.options"),
    ("pi_compact.app", "AppOptions", "pi_compact.options"),
    ("pi_compact.ui.slash", "COMMANDS", "pi_compact.ui.commands"),
    ("pi_compact.ui.slash", "dispatch", "pi_compact.ui.commands"),
    ("pi_compact.ui.slash", "ReplState", "pi_compact.ui.state"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED, ids=lambda value: str(value))
def test_the_old_import_path_gives_the_same_object(old: str, name: str, new: str) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(new), name)
