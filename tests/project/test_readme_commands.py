"""The README documents every slash command, key and setting the terminal offers, and nothing it does not."""

from __future__ import annotations

import re
from pathlib import Path

from pi_compact.settings.schema import KEYS
from pi_compact.ui.commands import COMMANDS, KEYS_HELP

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
USING_IT = README[README.index("## Using it"):README.index("## How compaction works")]


def test_every_command_is_in_the_readme_command_table() -> None:
    first_cells = [row.split(" | ")[0] for row in re.findall(r"^\| `/.*$", USING_IT, flags=re.M)]
    documented = {name for cell in first_cells for name in re.findall(r"`(/[a-z]+)", cell)}
    assert documented == {command.name for command in COMMANDS}


def test_every_key_of_help_is_in_the_readme_key_table() -> None:
    for key in ("Enter", "Ctrl-J", "Esc or Ctrl-C", "Ctrl-D", "Up / Down", "Tab", "Ctrl-O", "Shift+Tab"):
        assert f"| {key}" in USING_IT or f" {key} " in USING_IT, key
    assert {k.split(" ")[0] for k, _ in KEYS_HELP} <= {"Enter", "Alt-Enter", "Esc", "Ctrl-C", "Up", "Tab", "Ctrl-O",
                                                       "Shift+Tab"}


def test_the_readme_settings_table_lists_every_key_the_settings_read_and_no_other() -> None:
    rows = re.findall(r"^\| `([a-zA-Z.]+)`(?: / `([a-zA-Z.]+)`)? \|", README, flags=re.M)
    documented = {name for row in rows for name in row if name}
    assert documented == {key.dotted for key in KEYS} | {"models"}
