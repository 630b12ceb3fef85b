"""A mistyped long option ends in one line with a did-you-mean and exit code 2, not typer's box."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from pi_compact.cli.argv import unknown_option_message
from pi_compact.cli.flags import option_table
from pi_compact.cli.typer_app import build_app


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, bool]]:
    return option_table()


def _click_options(command: Any) -> dict[str, bool]:
    options = {"--help": False, "-h": False}
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            for name in (*param.opts, *param.secondary_opts):
                options[name] = not (param.is_flag or param.count)
    return options


def test_the_table_is_what_typer_parses(table: dict[str, dict[str, bool]]) -> None:
    group = typer.main.get_command(build_app())
    real = {"": _click_options(group), **{name: _click_options(c) for name, c in group.commands.items()}}
    assert table == real


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
