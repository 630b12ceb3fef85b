"""``compaction.clearToolResults``: read from pi-style nested keys, bad values warned about and ignored."""

from __future__ import annotations

from pi_compact.settings import parse_settings


def test_clear_tool_results_keys_are_read_from_the_nested_object() -> None:
    settings, warnings = parse_settings({"compaction": {"clearToolResults": {
        "enabled": False, "keepRecentTokens": 8000, "minClearTokens": 3000}}})
    assert warnings == []
    assert (settings.compaction.clear_tool_results, settings.compaction.clear_keep_recent_tokens,
            settings.compaction.clear_min_tokens) == (False, 8000, 3000)


def test_a_bad_clear_tool_results_value_warns_and_keeps_the_default() -> None:
    settings, warnings = parse_settings({"compaction": {"clearToolResults": {"enabled": "yes", "minClearTokens": 0}}})
    assert warnings == [
        'Ignoring compaction.clearToolResults.enabled: expected true or false, got "yes".',
        "Ignoring compaction.clearToolResults.minClearTokens: expected a whole number > 0, got 0.",
    ]
    assert settings.compaction.clear_tool_results is True and settings.compaction.clear_min_tokens is None


def test_clear_tool_results_that_is_not_an_object_warns() -> None:
    _, warnings = parse_settings({"compaction": {"clearToolResults": True}})
    assert warnings == ["Ignoring compaction.clearToolResults: expected an object, got true."]
