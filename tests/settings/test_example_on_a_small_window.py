"""settings.example.json copied as the global settings says nothing on a 16k window (issue 44, item 7):
it writes out every default, and a default is ours to fit to a small window, written out or not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pi_compact.compaction.window import plan_window
from pi_compact.model_facts import ModelInfo
from pi_compact.settings.files import load_settings

LOCAL = ModelInfo("local", "local", 16_384, None)  # the embedded model's window
EXAMPLE = Path(__file__).resolve().parents[2] / "settings.example.json"


def test_the_example_as_global_settings_gives_no_warning_on_the_embedded_models_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    shutil.copy(EXAMPLE, agent / "settings.json")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    project = tmp_path / "project"
    project.mkdir()
    loaded = load_settings(project)
    assert loaded.warnings == ()
    assert loaded.sources["compaction.reserveTokens"] == str(agent / "settings.json")
    plan = plan_window(loaded.settings, LOCAL, model="local", sources=loaded.sources, fixed_tokens=1_800)
    assert plan.warnings == ()
    # Fitted all the same: a threshold the conversation has room under.
    assert 0 < plan.settings.compaction.reserve_tokens < 16_384
    assert plan.settings.compaction.keep_recent_tokens < plan.threshold


def test_a_reserve_the_user_chose_is_still_named_when_it_cannot_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text('{"compaction": {"reserveTokens": 16000}}')
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    loaded = load_settings(tmp_path)
    plan = plan_window(loaded.settings, LOCAL, model="local", sources=loaded.sources, fixed_tokens=1_800)
    assert len(plan.warnings) == 1 and plan.warnings[0].startswith("compaction.reserveTokens (16000) in ")
