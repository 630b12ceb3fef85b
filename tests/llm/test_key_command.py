"""The one runner of ``models.json`` value commands (``apiKey``, header values): where it runs, what it keeps,
and the one sentence that says which command failed and why (issue 42, items 2 and 3)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pi_compact.errors import ConfigError
from pi_compact.llm.key_command import config_value, neutral_dir, run_key_command

WHAT = "the apiKey command of provider lab in models.json"


def test_a_key_command_runs_in_the_agent_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(project)
    assert run_key_command("pwd", WHAT) == str(agent)


def test_without_an_agent_directory_a_key_command_runs_in_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "missing"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert neutral_dir() == tmp_path


def test_a_failing_key_command_says_what_it_said_on_stderr() -> None:
    with pytest.raises(ConfigError) as caught:
        run_key_command("echo 'vault: not signed in' >&2; exit 4", WHAT)
    assert str(caught.value) == (
        "The apiKey command of provider lab in models.json `echo 'vault: not signed in' >&2; exit 4` failed "
        "(exit 4: vault: not signed in): fix the command or replace it with the value itself.")


def test_a_key_command_that_prints_nothing_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"`printf ' \\n'` printed nothing: fix the command"):
        run_key_command("printf ' \\n'", WHAT)


def test_a_key_command_past_its_time_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "late"
    with pytest.raises(ConfigError, match=r"ran for more than 0.5 s: fix the command"):
        run_key_command(f"(sleep 2; touch {marker}) & sleep 30", WHAT, timeout_s=0.5)
    subprocess.run(["sleep", "2.5"], check=True)
    assert not marker.exists()  # the background child was stopped too


def test_a_long_command_is_quoted_cut_and_without_control_characters() -> None:
    with pytest.raises(ConfigError) as caught:
        run_key_command("exit 1 #" + "\x1b]52;c;AAAA\x07" + "x" * 200, WHAT)
    text = str(caught.value)
    assert "\x1b" not in text and "\x07" not in text
    assert "`exit 1 # ]52;c;AAAA " + "x" * 60 + "…` failed (exit 1)" in text


def test_a_value_that_is_not_a_command_is_a_variable_or_itself() -> None:
    assert config_value("LAB_KEY", WHAT, {"LAB_KEY": "sk-env"}) == "sk-env"
    assert config_value("sk-literal", WHAT, {"LAB_KEY": "sk-env"}) == "sk-literal"
    assert config_value("!printf ' sk-cmd \\n'", WHAT, {}) == "sk-cmd"
