"""One mapping from a failure to the exit code, and the model chosen once from --model and the settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pi_compact.cli.choices import choose_model
from pi_compact.cli.exits import EXIT_CANCELLED, EXIT_FAILED, EXIT_USAGE, exit_code_for, report
from pi_compact.cli.typer_app import build_app
from pi_compact.cli.wiring import AppRuntimes
from pi_compact.errors import Cancelled, ConfigError, ModelError, SessionError, UsageError
from pi_compact.options import AppOptions
from pi_compact.settings import Settings


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError("bad flag"), EXIT_USAGE),
        (SessionError("bad file"), EXIT_USAGE),
        (ConfigError("bad setting"), EXIT_FAILED),
        (ModelError("the provider failed"), EXIT_FAILED),
        (Cancelled(), EXIT_CANCELLED),
        (KeyboardInterrupt(), EXIT_CANCELLED),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_each_kind_of_failure_has_its_exit_code(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code


def test_a_cancel_is_worded_by_the_caller(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(KeyboardInterrupt(), cancelled="cancelled; the session file was not changed.") == 130
    assert report(UsageError("Session file x does not exist."), cancelled="unused") == 2
    assert capsys.readouterr().err == (
        "pi-compact: cancelled; the session file was not changed.\npi-compact: Session file x does not exist.\n"
    )


def test_the_flag_wins_then_the_default_model_with_its_provider_then_none() -> None:
    configured = Settings(default_model="gpt-4o", default_provider="openai")
    assert choose_model("anthropic/claude-sonnet-4", configured) == "anthropic/claude-sonnet-4"
    assert choose_model(None, configured) == "openai/gpt-4o"
    assert choose_model(None, Settings()) is None


def test_the_terminal_gets_the_model_chosen_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--model as given; without it the settings' defaultModel, marked as coming from the settings."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "openai", "defaultModel": "gpt-4o"}))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(tmp_path)
    started: list[AppOptions] = []

    def fake_repl(runtimes: AppRuntimes, loaded: object, first_message: str | None = None) -> int:
        started.append(runtimes.options)
        return 0

    monkeypatch.setattr("pi_compact.ui.repl.run_repl", fake_repl)
    assert CliRunner().invoke(build_app(), ["--no-session"]).exit_code == 0
    assert CliRunner().invoke(build_app(), ["--no-session", "--model", "openai/other"]).exit_code == 0
    assert [(options.model, options.model_from_settings) for options in started] == [
        ("openai/gpt-4o", True), ("openai/other", False)
    ]
