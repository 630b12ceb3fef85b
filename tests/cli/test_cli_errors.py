"""A user's mistake ends in one sentence; ``PI_COMPACT_RAISE_ERRORS`` re-raises it instead (for debugging)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pi_compact.cli.compact import compact_command
from pi_compact.cli.typer_app import build_app
from pi_compact.errors import RAISE_ERRORS_VARIABLE, UsageError


def test_a_usage_error_is_one_sentence_and_exit_code_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(RAISE_ERRORS_VARIABLE, raising=False)
    assert compact_command(tmp_path / "missing.jsonl") == 2
    assert capsys.readouterr().err == f"pi-compact: Session file {tmp_path / 'missing.jsonl'} does not exist.\n"


def test_the_debug_switch_reraises_the_error_of_the_compact_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RAISE_ERRORS_VARIABLE, "1")
    with pytest.raises(UsageError, match="does not exist"):
        compact_command(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(("value", "raises"), [("1", True), ("0", False), ("", False)])
def test_the_debug_switch_reraises_the_error_of_the_agent_command(
    monkeypatch: pytest.MonkeyPatch, value: str, raises: bool
) -> None:
    monkeypatch.setenv(RAISE_ERRORS_VARIABLE, value)
    done = CliRunner().invoke(build_app(), ["--mode", "xml", "-p", "hi"])
    if raises:
        assert isinstance(done.exception, UsageError)
    else:
        assert (done.exit_code, done.stderr) == (2, "pi-compact: --mode must be text or json, got 'xml'.\n")
