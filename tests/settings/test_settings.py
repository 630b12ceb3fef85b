"""Pure settings rules: parsing, validation, pi's two-level merge, window checks, the example file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_compact.compaction.threshold import fit_to_window, validate_against_window
from pi_compact.settings import (
    KEYS,
    CompactionSettings,
    ModelOverride,
    RetrySettings,
    Settings,
    merge_settings,
    parse_settings,
)
from pi_compact.settings.report import settings_as_json, settings_items

EXAMPLE = Path(__file__).resolve().parents[2] / "settings.example.json"


def test_empty_mapping_parses_to_defaults() -> None:
    assert parse_settings({}) == (Settings(), [])


def test_every_key_is_read_from_pi_layout() -> None:
    raw = {
        "compaction": {
            "enabled": False, "reserveTokens": 1000, "keepRecentTokens": 2000,
            "tokenEstimator": "chars4", "retainTail": False,
        },
        "retry": {
            "enabled": False, "maxRetries": 5, "baseDelayMs": 10,
            "provider": {"maxRetryDelayMs": 99, "timeoutMs": 1500, "idleTimeoutMs": 700},
        },
        "defaultProvider": "openai", "defaultModel": "gpt-4.1", "showThinking": False, "sessionDir": "~/s",
        "models": {"ollama/qwen3": {"contextWindow": 32768, "maxTokens": 4096, "apiBase": "http://h:1"}},
    }
    settings, warnings = parse_settings(raw)
    assert warnings == []
    assert settings == Settings(
        compaction=CompactionSettings(False, 1000, 2000, "chars4", False),
        retry=RetrySettings(False, 5, 10, 99, 1500, 700),
        default_provider="openai",
        default_model="gpt-4.1",
        models=(("ollama/qwen3", ModelOverride(32768, 4096, "http://h:1")),),
        show_thinking=False,
        session_dir="~/s",
    )


def test_merge_project_scalar_beats_global() -> None:
    assert merge_settings({"defaultModel": "a"}, {"defaultModel": "b"}) == {"defaultModel": "b"}


def test_merge_spreads_nested_objects_one_level() -> None:
    merged = merge_settings(
        {"compaction": {"reserveTokens": 1, "keepRecentTokens": 2}}, {"compaction": {"keepRecentTokens": 3}}
    )
    assert merged == {"compaction": {"reserveTokens": 1, "keepRecentTokens": 3}}


def test_merge_replaces_arrays() -> None:
    assert merge_settings({"skills": ["a", "b"]}, {"skills": ["c"]}) == {"skills": ["c"]}


def test_merge_replaces_third_level_objects_whole() -> None:
    merged = merge_settings(
        {"retry": {"provider": {"maxRetryDelayMs": 5, "timeoutMs": 7}}},
        {"retry": {"provider": {"timeoutMs": 9}}},
    )
    assert merged == {"retry": {"provider": {"timeoutMs": 9}}}


def test_merge_object_replaces_scalar_and_scalar_replaces_object() -> None:
    assert merge_settings({"a": 1, "b": {"x": 1}}, {"a": {"y": 2}, "b": 3}) == {"a": {"y": 2}, "b": 3}


def test_merge_skips_null_top_level_values() -> None:
    assert merge_settings({"compaction": {"enabled": False}}, {"compaction": None}) == {
        "compaction": {"enabled": False}
    }


def test_merge_leaves_inputs_unchanged() -> None:
    base = {"compaction": {"reserveTokens": 1}}
    override = {"compaction": {"keepRecentTokens": 3}}
    merge_settings(base, override)
    assert base == {"compaction": {"reserveTokens": 1}}
    assert override == {"compaction": {"keepRecentTokens": 3}}


def test_string_reserve_tokens_is_ignored_and_other_keys_apply() -> None:
    settings, warnings = parse_settings({"compaction": {"reserveTokens": "big", "keepRecentTokens": 500}})
    assert settings.compaction.reserve_tokens == 16384
    assert settings.compaction.keep_recent_tokens == 500
    assert warnings == ['Ignoring compaction.reserveTokens: expected a whole number >= 0, got "big".']


@pytest.mark.parametrize(
    ("section", "key"),
    [("compaction", "reserveTokens"), ("compaction", "keepRecentTokens"), ("retry", "maxRetries"),
     ("retry", "baseDelayMs")],
)
def test_negative_numbers_are_rejected(section: str, key: str) -> None:
    settings, warnings = parse_settings({section: {key: -1}})
    assert settings == Settings()
    assert len(warnings) == 1 and f"{section}.{key}" in warnings[0] and "got -1" in warnings[0]


def test_zero_keep_recent_tokens_is_rejected() -> None:
    settings, warnings = parse_settings({"compaction": {"keepRecentTokens": 0}})
    assert settings.compaction.keep_recent_tokens == 20000
    assert warnings == ["Ignoring compaction.keepRecentTokens: expected a whole number > 0, got 0."]


def test_zero_reserve_tokens_is_accepted() -> None:
    assert parse_settings({"compaction": {"reserveTokens": 0}})[0].compaction.reserve_tokens == 0


def test_unknown_token_estimator_is_rejected() -> None:
    settings, warnings = parse_settings({"compaction": {"tokenEstimator": "tiktoken"}})
    assert settings.compaction.token_estimator == "auto"
    assert warnings == ['Ignoring compaction.tokenEstimator: expected "auto" or "chars4", got "tiktoken".']


def test_background_compaction_keys_are_read() -> None:
    settings, warnings = parse_settings({"compaction": {"background": True, "softThresholdPercent": 85.0}})
    assert warnings == []
    assert (settings.compaction.background, settings.compaction.soft_threshold_percent) == (True, 85)


@pytest.mark.parametrize("value", [9, 100, 70.5, True, "70"])
def test_soft_threshold_percent_outside_10_to_99_is_rejected(value: Any) -> None:
    settings, warnings = parse_settings({"compaction": {"softThresholdPercent": value}})
    assert settings.compaction.soft_threshold_percent == 70
    assert warnings == [f"Ignoring compaction.softThresholdPercent: expected a whole number from 10 to 99, "
                        f"got {json.dumps(value)}."]


def test_boolean_is_not_accepted_as_a_number() -> None:
    settings, warnings = parse_settings({"retry": {"maxRetries": True}})
    assert settings.retry.max_retries == 3
    assert warnings == ["Ignoring retry.maxRetries: expected a whole number >= 0, got true."]


def test_number_is_not_accepted_as_a_boolean() -> None:
    settings, warnings = parse_settings({"showThinking": 1})
    assert settings.show_thinking is True
    assert warnings == ["Ignoring showThinking: expected true or false, got 1."]


def test_integral_float_is_accepted_and_fraction_is_not() -> None:
    settings, warnings = parse_settings({"compaction": {"reserveTokens": 2000.0, "keepRecentTokens": 1.5}})
    assert settings.compaction.reserve_tokens == 2000
    assert isinstance(settings.compaction.reserve_tokens, int)
    assert warnings == ["Ignoring compaction.keepRecentTokens: expected a whole number > 0, got 1.5."]


def test_unknown_keys_are_ignored_silently() -> None:
    raw = {"theme": "dark", "compaction": {"modelOverrides": {}}, "branchSummary": {"reserveTokens": 5}}
    assert parse_settings(raw) == (Settings(), [])


def test_section_that_is_not_an_object_warns_once() -> None:
    settings, warnings = parse_settings({"compaction": "on"})
    assert settings.compaction == CompactionSettings()
    assert warnings == ['Ignoring compaction: expected an object, got "on".']


def test_null_value_means_not_set() -> None:
    assert parse_settings({"compaction": {"reserveTokens": None}, "defaultModel": None}) == (Settings(), [])


def test_empty_default_model_is_rejected() -> None:
    settings, warnings = parse_settings({"defaultModel": " "})
    assert settings.default_model is None
    assert warnings == ['Ignoring defaultModel: expected a non-empty string, got " ".']


def test_compaction_model_is_read_and_an_empty_one_is_rejected() -> None:
    settings, warnings = parse_settings({"compaction": {"model": "openai/gpt-4o-mini"}})
    assert (settings.compaction.model, warnings) == ("openai/gpt-4o-mini", [])
    settings, warnings = parse_settings({"compaction": {"model": "  "}})
    assert settings.compaction.model is None
    assert warnings == ['Ignoring compaction.model: expected a non-empty string, got "  ".']


def test_legacy_retry_max_delay_is_migrated() -> None:
    settings, warnings = parse_settings({"retry": {"maxDelayMs": 1234}})
    assert (settings.retry.max_delay_ms, warnings) == (1234, [])


def test_new_retry_key_wins_over_legacy_one_in_the_same_file() -> None:
    settings, _ = parse_settings({"retry": {"maxDelayMs": 1, "provider": {"maxRetryDelayMs": 2}}})
    assert settings.retry.max_delay_ms == 2


def test_invalid_legacy_retry_max_delay_names_the_legacy_key() -> None:
    settings, warnings = parse_settings({"retry": {"maxDelayMs": "soon"}})
    assert settings.retry.max_delay_ms == 60000
    assert warnings == ['Ignoring retry.maxDelayMs: expected a whole number >= 0, got "soon".']


def test_pi_hide_thinking_block_turns_show_thinking_off() -> None:
    assert parse_settings({"hideThinkingBlock": True})[0].show_thinking is False


def test_show_thinking_wins_over_hide_thinking_block() -> None:
    assert parse_settings({"hideThinkingBlock": True, "showThinking": True})[0].show_thinking is True


def test_bad_model_field_is_dropped_and_the_rest_of_the_entry_kept() -> None:
    settings, warnings = parse_settings({"models": {"a/b.c": {"contextWindow": -5, "apiBase": "http://x"}}})
    assert settings.model_override("a/b.c") == ModelOverride(context_window=None, api_base="http://x")
    assert warnings == ['Ignoring models["a/b.c"].contextWindow: expected a whole number > 0, got -5.']


def test_model_entry_that_is_not_an_object_is_dropped() -> None:
    settings, warnings = parse_settings({"models": {"m": 4096}})
    assert settings.models == ()
    assert warnings == [
        'Ignoring models["m"]: expected an object with contextWindow, maxTokens or apiBase, got 4096.'
    ]


def test_parse_does_not_mutate_its_input() -> None:
    raw: dict[str, Any] = {"retry": {"maxDelayMs": 5}, "compaction": {"reserveTokens": "x"}}
    before = json.dumps(raw)
    parse_settings(raw)
    assert json.dumps(raw) == before


def test_window_check_accepts_defaults_for_a_large_window() -> None:
    assert validate_against_window(Settings(), 128_000) == []


# (Values the user chose: a default is fitted silently, also when a file writes it out, issue 44.)
def test_window_check_flags_keep_recent_tokens_that_cannot_fit() -> None:
    warnings = validate_against_window(Settings(compaction=CompactionSettings(keep_recent_tokens=20_001)), 32_000)
    assert len(warnings) == 1
    assert "compaction.keepRecentTokens (20001)" in warnings[0] and "15616" in warnings[0]


def test_window_check_flags_reserve_tokens_at_least_the_window() -> None:
    chosen = CompactionSettings(reserve_tokens=16_000, keep_recent_tokens=20_001)
    warnings = validate_against_window(Settings(compaction=chosen), 16_000)
    # The reserve is replaced by 4,000; the keep (20,001) does not fit under that either.
    assert len(warnings) == 2 and "compaction.reserveTokens (16000)" in warnings[0]
    assert "compaction.keepRecentTokens (20001)" in warnings[1] and "12000 tokens" in warnings[1]


def test_window_check_fits_the_defaults_silently() -> None:
    assert validate_against_window(Settings(), 16_000) == []


def test_window_check_is_silent_for_unknown_window() -> None:
    assert validate_against_window(Settings(), 0) == []


def test_settings_items_list_every_key_in_table_order() -> None:
    items = settings_items(Settings(models=(("z", ModelOverride(1)), ("a", ModelOverride(api_base="u")))))
    assert [k for k, _ in items] == [key.dotted for key in KEYS] + ['models["a"]', 'models["z"]']
    assert items[-1] == ('models["z"]', {"contextWindow": 1})


def test_settings_items_show_an_empty_models_row_without_models() -> None:
    assert settings_items(Settings())[-1] == ("models", {})


def test_json_layout_round_trips_through_parse() -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=7), models=(("m", ModelOverride(9)),))
    assert parse_settings(settings_as_json(settings)) == (settings, [])


def test_example_file_parses_to_the_defaults() -> None:
    assert parse_settings(json.loads(EXAMPLE.read_text(encoding="utf-8"))) == (Settings(), [])


def test_example_file_lists_every_key() -> None:
    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    without_comments = {k: v for k, v in example.items() if not k.startswith("//")}
    assert without_comments == settings_as_json(Settings())


def test_window_fit_replaces_a_reserve_not_below_the_window_and_names_its_file() -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=20_000, keep_recent_tokens=1_000))
    fitted, warnings = fit_to_window(settings, 10_000, model="openai/x",
                                     sources={"compaction.reserveTokens": "/home/u/.pi/agent/settings.json"})
    assert (fitted.compaction.reserve_tokens, fitted.compaction.keep_recent_tokens) == (2_500, 1_000)
    assert warnings == [
        "compaction.reserveTokens (20000) in /home/u/.pi/agent/settings.json is not smaller than the 10000-token "
        "context window of openai/x, so auto-compaction would run before every turn; using 2500 instead."
    ]


def test_window_fit_replaces_a_keep_that_cannot_fit_under_the_threshold() -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=2_000, keep_recent_tokens=10_000))
    fitted, warnings = fit_to_window(settings, 10_000, sources={"compaction.keepRecentTokens": "CLI flag"})
    assert (fitted.compaction.reserve_tokens, fitted.compaction.keep_recent_tokens) == (2_000, 4_000)
    assert warnings == [
        "compaction.keepRecentTokens (10000, from the command line) is not smaller than the 8000 tokens left by the "
        "10000-token context window minus compaction.reserveTokens (2000), so compaction could not bring the "
        "context under its threshold; using 4000 instead."
    ]


def test_window_fit_leaves_working_settings_alone() -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=2_000, keep_recent_tokens=1_000))
    assert fit_to_window(settings, 10_000) == (settings, [])


def test_absurd_numbers_are_rejected_with_their_maximum() -> None:
    raw = {"compaction": {"reserveTokens": 1e36}, "models": {"m": {"contextWindow": 1e12}}}
    settings, warnings = parse_settings(raw)
    assert settings.compaction.reserve_tokens == Settings().compaction.reserve_tokens
    assert settings.models == (("m", ModelOverride()),)
    assert warnings == [
        "Ignoring compaction.reserveTokens: expected a whole number >= 0 and at most 1,000,000,000, got 1e+36.",
        'Ignoring models["m"].contextWindow: expected a whole number > 0 and at most 1,000,000,000, '
        "got 1000000000000.0.",
    ]


def test_window_fit_fits_defaults_silently() -> None:
    sources = {"compaction.reserveTokens": "default", "compaction.keepRecentTokens": "default"}
    fitted, warnings = fit_to_window(Settings(), 8_000, sources=sources)
    assert (fitted.compaction.reserve_tokens, fitted.compaction.keep_recent_tokens, warnings) == (2_000, 3_000, [])
