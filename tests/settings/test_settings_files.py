"""Reading the global and project settings files: precedence, warnings, provenance, no writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_compact.errors import UsageError
from pi_compact.settings import KEYS, ModelOverride
from pi_compact.settings.files import describe, load_settings


@pytest.fixture()
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(directory))
    return directory


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "proj"
    directory.mkdir()
    return directory


def write_global(agent: Path, data: Any) -> Path:
    path = agent / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def write_project(project: Path, data: Any) -> Path:
    (project / ".pi").mkdir(exist_ok=True)
    path = project / ".pi" / "settings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_no_files_give_defaults_from_default_sources(agent: Path, project: Path) -> None:
    loaded = load_settings(project)
    assert loaded.warnings == ()
    assert set(loaded.sources.values()) == {"default"}
    assert loaded.settings.compaction.reserve_tokens == 16384


def test_project_value_beats_global_value(agent: Path, project: Path) -> None:
    write_global(agent, {"compaction": {"keepRecentTokens": 100}})
    project_file = write_project(project, {"compaction": {"keepRecentTokens": 200}})
    loaded = load_settings(project)
    assert loaded.settings.compaction.keep_recent_tokens == 200
    assert loaded.sources["compaction.keepRecentTokens"] == str(project_file)


def test_nested_keys_from_both_files_combine(agent: Path, project: Path) -> None:
    global_file = write_global(agent, {"compaction": {"reserveTokens": 1000, "enabled": False}})
    project_file = write_project(project, {"compaction": {"keepRecentTokens": 300}})
    loaded = load_settings(project)
    assert (loaded.settings.compaction.reserve_tokens, loaded.settings.compaction.enabled) == (1000, False)
    assert loaded.settings.compaction.keep_recent_tokens == 300
    assert loaded.sources["compaction.reserveTokens"] == str(global_file)
    assert loaded.sources["compaction.enabled"] == str(global_file)
    assert loaded.sources["compaction.keepRecentTokens"] == str(project_file)
    assert loaded.sources["compaction.retainTail"] == "default"


def test_project_retry_provider_object_replaces_the_global_one(agent: Path, project: Path) -> None:
    write_global(agent, {"retry": {"provider": {"maxRetryDelayMs": 5}}})
    write_project(project, {"retry": {"provider": {"timeoutMs": 1000}}})
    loaded = load_settings(project)
    assert loaded.settings.retry.max_delay_ms == 60000
    assert loaded.sources["retry.provider.maxRetryDelayMs"] == "default"


def test_malformed_global_file_warns_with_position_and_project_still_applies(
    agent: Path, project: Path
) -> None:
    global_file = write_global(agent, '{\n  "compaction": {"reserveTokens": 5,}\n}')
    write_project(project, {"compaction": {"keepRecentTokens": 321}})
    loaded = load_settings(project)
    assert len(loaded.warnings) == 1
    assert str(global_file) in loaded.warnings[0]
    assert "line 2, column 37" in loaded.warnings[0]
    assert loaded.settings.compaction.keep_recent_tokens == 321
    assert loaded.settings.compaction.reserve_tokens == 16384


def test_file_holding_an_array_warns_and_counts_as_empty(agent: Path, project: Path) -> None:
    global_file = write_global(agent, "[1, 2]")
    loaded = load_settings(project)
    assert loaded.warnings == (
        f"Ignoring settings file {global_file}: it must hold a JSON object, not an array.",
    )


def test_wrong_type_warns_naming_key_and_file_and_other_keys_apply(agent: Path, project: Path) -> None:
    project_file = write_project(
        project, {"compaction": {"reserveTokens": "big", "keepRecentTokens": 777}, "showThinking": False}
    )
    loaded = load_settings(project)
    assert loaded.warnings == (
        f'Ignoring compaction.reserveTokens in {project_file}: expected a whole number >= 0, got "big".',
    )
    assert loaded.settings.compaction.keep_recent_tokens == 777
    assert loaded.settings.show_thinking is False
    assert loaded.sources["compaction.reserveTokens"] == "default"


def test_invalid_project_value_falls_back_to_the_global_value(agent: Path, project: Path) -> None:
    global_file = write_global(agent, {"retry": {"maxRetries": 7}})
    write_project(project, {"retry": {"maxRetries": -2}})
    loaded = load_settings(project)
    assert loaded.settings.retry.max_retries == 7
    assert loaded.sources["retry.maxRetries"] == str(global_file)
    assert len(loaded.warnings) == 1 and "retry.maxRetries" in loaded.warnings[0]


def test_negative_number_in_a_file_is_rejected(agent: Path, project: Path) -> None:
    global_file = write_global(agent, {"compaction": {"reserveTokens": -1}})
    loaded = load_settings(project)
    assert loaded.settings.compaction.reserve_tokens == 16384
    assert loaded.warnings == (
        f"Ignoring compaction.reserveTokens in {global_file}: expected a whole number >= 0, got -1.",
    )


def test_loading_leaves_files_byte_identical(agent: Path, project: Path) -> None:
    global_text = '{"retry": {"maxDelayMs": 5}, "theme": "dark"}'
    project_text = '\ufeff{ "compaction" : { "reserveTokens" : "x" } }\n'
    global_file = write_global(agent, global_text)
    project_file = write_project(project, project_text)
    before = (global_file.read_bytes(), project_file.read_bytes())
    load_settings(project)
    assert (global_file.read_bytes(), project_file.read_bytes()) == before


def test_loading_creates_no_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "missing-agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    project = tmp_path / "proj"
    project.mkdir()
    load_settings(project)
    assert not (project / ".pi").exists()
    assert not agent.exists()


def test_byte_order_mark_is_accepted(agent: Path, project: Path) -> None:
    write_global(agent, '\ufeff{"defaultModel": "m"}')
    loaded = load_settings(project)
    assert (loaded.settings.default_model, loaded.warnings) == ("m", ())


def test_legacy_retry_key_is_sourced_from_its_file(agent: Path, project: Path) -> None:
    global_file = write_global(agent, {"retry": {"maxDelayMs": 4321}})
    loaded = load_settings(project)
    assert loaded.settings.retry.max_delay_ms == 4321
    assert loaded.sources["retry.provider.maxRetryDelayMs"] == str(global_file)


def test_cli_override_wins_over_files_and_is_reported(agent: Path, project: Path) -> None:
    write_global(agent, {"compaction": {"keepRecentTokens": 100, "reserveTokens": 50}})
    write_project(project, {"compaction": {"keepRecentTokens": 200}})
    loaded = load_settings(project, {"compaction.keepRecentTokens": 2000})
    assert loaded.settings.compaction.keep_recent_tokens == 2000
    assert loaded.settings.compaction.reserve_tokens == 50
    assert loaded.sources["compaction.keepRecentTokens"] == "CLI flag"


def test_cli_override_of_none_means_flag_not_given(agent: Path, project: Path) -> None:
    global_file = write_global(agent, {"defaultModel": "g"})
    loaded = load_settings(project, {"defaultModel": None})
    assert loaded.settings.default_model == "g"
    assert loaded.sources["defaultModel"] == str(global_file)


def test_cli_override_with_invalid_value_raises_usage_error(agent: Path, project: Path) -> None:
    with pytest.raises(UsageError, match=r"compaction\.reserveTokens: expected a whole number >= 0"):
        load_settings(project, {"compaction.reserveTokens": -3})


def test_cli_override_with_unknown_key_raises_usage_error(agent: Path, project: Path) -> None:
    with pytest.raises(UsageError, match="Unknown setting 'compaction.size'"):
        load_settings(project, {"compaction.size": 3})


def test_project_model_entry_merges_with_the_global_entry_field_by_field(agent: Path, project: Path) -> None:
    # Issue 30, 10b: a project entry with only safe fields used to replace the user's entry whole, dropping
    # the user's apiBase (the model then went to the provider's own endpoint with the user's key).
    write_global(
        agent, {"models": {"m": {"contextWindow": 1000, "apiBase": "http://g"}, "g": {"maxTokens": 9}}}
    )
    project_file = write_project(project, {"models": {"m": {"contextWindow": 2000}}})
    loaded = load_settings(project)
    assert loaded.warnings == ()
    assert loaded.settings.model_override("m") == ModelOverride(context_window=2000, api_base="http://g")
    assert loaded.settings.model_override("g") == ModelOverride(max_tokens=9)
    assert loaded.sources['models["m"]'] == str(project_file)
    assert loaded.sources['models["g"]'] == str(agent / "settings.json")


def test_describe_lists_every_key_with_value_and_source(agent: Path, project: Path) -> None:
    global_file = write_global(agent, {"retry": {"maxRetries": 9}})
    rows = describe(load_settings(project, {"showThinking": False}))
    assert [row[0] for row in rows] == [key.dotted for key in KEYS] + ["models"]
    assert ("retry.maxRetries", 9, str(global_file)) in rows
    assert ("showThinking", False, "CLI flag") in rows
    assert ("compaction.reserveTokens", 16384, "default") in rows
    assert rows[-1] == ("models", {}, "default")


def test_unreadable_settings_path_warns_and_counts_as_empty(agent: Path, project: Path) -> None:
    (agent / "settings.json").mkdir()
    write_project(project, {"maxTurns": 7})
    loaded = load_settings(project)
    assert len(loaded.warnings) == 1
    expected_start = f"Ignoring settings file {agent / 'settings.json'}: it cannot be read"
    assert loaded.warnings[0].startswith(expected_start)
    assert loaded.settings.max_turns == 7
