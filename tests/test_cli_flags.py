"""A mistyped long option ends in one line with a did-you-mean and exit code 2, not typer's box."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from pi_compact.cli import app
from pi_compact.cli_flags import option_table, unknown_option_message


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, bool]]:
    return option_table(typer.main.get_command(app.build()))


def test_the_table_holds_the_real_options_of_each_command(table: dict[str, dict[str, bool]]) -> None:
    assert table[""]["--context-window"] is True
    assert table[""]["--no-session"] is False
    assert table[""]["-p"] is True
    assert table["compact"]["--dry-run"] is False
    assert "--dry-run" not in table[""]


def test_a_typo_of_a_main_option_names_the_likely_one(table: dict[str, dict[str, bool]]) -> None:
    assert unknown_option_message(["--contxt-window", "5"], table) == (
        "pi-compact: no such option --contxt-window (did you mean --context-window?); see pi-compact --help"
    )


def test_a_subcommand_option_is_checked_against_that_subcommand(table: dict[str, dict[str, bool]]) -> None:
    assert unknown_option_message(["compact", "s.jsonl", "--dry-rn"], table) == (
        "pi-compact: no such option --dry-rn (did you mean --dry-run?); see pi-compact compact --help"
    )
    assert unknown_option_message(["compact", "s.jsonl", "--dry-run"], table) is None


def test_option_values_and_words_after_a_double_dash_are_not_options(table: dict[str, dict[str, bool]]) -> None:
    assert unknown_option_message(["-p", "--not-an-option", "--model", "m"], table) is None
    assert unknown_option_message(["--model=m", "--", "--foo"], table) is None


def test_an_option_with_nothing_close_gets_no_guess(table: dict[str, dict[str, bool]]) -> None:
    assert unknown_option_message(["--zzzzzz"], table) == "pi-compact: no such option --zzzzzz; see pi-compact --help"


def test_the_command_line_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pi_compact", "--contxt-window", "5"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "pi-compact: no such option --contxt-window (did you mean --context-window?); see pi-compact --help\n"
    )
