"""A one-line answer to a mistyped long option, before typer would print its four-line box.

Contract:
- ``option_table(group)`` reads the options each command accepts from the click objects typer built
  (so the table can never drift from the real flags): ``{"": main options, "compact": ..., ...}``,
  each option mapped to whether it takes a value.
- ``unknown_option_message(argv, table)`` walks ``argv`` as click would (a value option consumes the next
  token, ``--`` ends options, a subcommand name switches the table) and returns one sentence for the
  first ``--name`` the chosen command does not know, with a did-you-mean when one is close; else None.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

HELP_OPTIONS: Mapping[str, bool] = {"--help": False, "-h": False}

OptionTable = Mapping[str, Mapping[str, bool]]


def _options(command: Any) -> dict[str, bool]:
    options = dict(HELP_OPTIONS)
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        takes_value = not (param.is_flag or param.count)
        for name in (*param.opts, *param.secondary_opts):
            options[name] = takes_value
    return options


def option_table(group: Any) -> dict[str, dict[str, bool]]:
    """The options of the main command ("") and of each subcommand, from typer's click group."""
    table = {"": _options(group)}
    for name, command in getattr(group, "commands", {}).items():
        table[name] = _options(command)
    return table


def unknown_option_message(argv: list[str], table: OptionTable) -> str | None:
    """One sentence about the first long option ``argv`` gives its command that it does not accept."""
    command = ""
    index = 0
    seen_positional = False
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            return None
        known = table[command]
        if token.startswith("-") and token != "-":
            name = token.split("=", 1)[0] if token.startswith("--") else token
            if name in known:
                if known[name] and "=" not in token:
                    index += 1  # its value, whatever it looks like
            elif token.startswith("--"):
                return _message(name, command, known)
            continue
        if not seen_positional and command == "" and token in table and token:
            command = token
            continue
        seen_positional = True
    return None


def _message(name: str, command: str, known: Mapping[str, bool]) -> str:
    longs = sorted(option for option in known if option.startswith("--") and option != "--initial-message")
    guess = difflib.get_close_matches(name, longs, n=1, cutoff=0.7)
    hint = f" (did you mean {guess[0]}?)" if guess else ""
    help_command = f"pi-compact {command} --help" if command else "pi-compact --help"
    return f"pi-compact: no such option {name}{hint}; see {help_command}"
