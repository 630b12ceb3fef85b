"""Unknown settings keys get one did-you-mean warning naming the real settings file, once per start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_compact.paths import settings_path_hint
from pi_compact.settings.files import load_settings
from pi_compact.settings.unknown_keys import unknown_key_warnings

SETTINGS = {"compaction": {"keepRecentToken": 5, "reserveTokens": 100}, "thme": "dark", "theme": "dark"}


def test_a_misspelt_section_key_gets_a_did_you_mean_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert unknown_key_warnings({"compaction": {"keepRecentToken": 5}}, path) == [
        f"Unknown setting compaction.keepRecentToken in {path} is ignored (did you mean compaction.keepRecentTokens?)."
    ]


def test_a_misspelt_background_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert unknown_key_warnings({"compaction": {"softThresholdPercnt": 80, "background": True}}, path) == [
        f"Unknown setting compaction.softThresholdPercnt in {path} is ignored "
        "(did you mean compaction.softThresholdPercent?)."
    ]


def test_keys_only_pi_reads_raise_no_warning(tmp_path: Path) -> None:
    raw = {"theme": "dark", "packages": [], "retry": {"maxDelayMs": 5, "provider": {"maxRetries": 2}},
           "models": {"a/b": {"contextWindow": 5}}, "hideThinkingBlock": True}
    assert unknown_key_warnings(raw, tmp_path / "s.json") == []


def test_a_misspelt_compaction_model_key_names_the_new_key(tmp_path: Path) -> None:
    assert unknown_key_warnings({"compaction": {"modle": "openai/gpt-4o-mini"}}, tmp_path / "s.json") == [
        f"Unknown setting compaction.modle in {tmp_path / 's.json'} is ignored (did you mean compaction.model?)."
    ]


def test_the_example_settings_file_with_its_comment_keys_raises_no_warning(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "settings.example.json"
    raw = json.loads(example.read_text(encoding="utf-8"))
    assert any(key.startswith("//") for key in raw)
    assert unknown_key_warnings(raw, tmp_path / "s.json") == []


def test_an_unknown_key_with_nothing_close_is_still_named(tmp_path: Path) -> None:
    assert unknown_key_warnings({"zzzz": 1}, tmp_path / "s.json") == [
        f"Unknown setting zzzz in {tmp_path / 's.json'} is ignored."
    ]


def test_loading_settings_reports_unknown_keys_of_the_project_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / ".pi").mkdir()
    project = tmp_path / ".pi" / "settings.json"
    project.write_text(json.dumps({"retry": {"maxRetrys": 3}}), encoding="utf-8")
    assert load_settings(tmp_path).warnings == (
        f"Unknown setting retry.maxRetrys in {project} is ignored (did you mean retry.maxRetries?).",
    )


def test_the_settings_path_hint_honours_the_agent_dir_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert settings_path_hint() == str(tmp_path / "agent" / "settings.json")


def _start(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_OFFLINE_MODE": "true"}
    return subprocess.run([sys.executable, "-m", "pi_compact", *args], cwd=tmp_path, env=env, input="",
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [("-p", "hi", "--model", "nosuch/model"), ("--mode", "json", "-p", "hi", "--model", "nosuch/model"),
     ("compact", "s.jsonl", "--dry-run", "--context-window", "100000")],
)
def test_each_mode_warns_once_per_start(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "s.jsonl").write_text(json.dumps(
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(tmp_path)}
    ) + "\n", encoding="utf-8")
    done = _start(tmp_path, *args)
    settings = tmp_path / "agent" / "settings.json"
    lines = done.stderr.splitlines()
    assert lines.count(
        f"warning: Unknown setting compaction.keepRecentToken in {settings} is ignored "
        "(did you mean compaction.keepRecentTokens?)."
    ) == 1
    assert lines.count(f"warning: Unknown setting thme in {settings} is ignored (did you mean theme?).") == 1
