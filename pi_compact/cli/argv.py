"""What the command line says beyond what typer parses: three walks over argv, all reading ``flags``.

- ``split_prompt_words`` takes the positional prompt words out of a start-up line, for typer to get the rest.
- ``unknown_option_message`` words a mistyped ``--option`` in one line (typer's box takes four).
- ``fast_compact_args`` parses a plain ``compact`` line without typer, or gives up (None) and leaves it to typer.
``plan_start`` then decides, from ``-p``, the prompt words and piped stdin, what the run does.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pi_compact.cli.flags import COMPACT, INITIAL_OPTION, MAIN, SUBCOMMANDS, OptionTable, value_options

# Options of the main command that take a value: the word after them is that value, not a prompt.
VALUE_OPTIONS = value_options(MAIN)


def split_prompt_words(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its positional prompt words, and those words (empty when there are none).

    A line whose first positional word is a subcommand (``compact``) is returned untouched, and option
    values (``--model X``) are never taken for prompt words.
    """
    rest: list[str] = []
    words: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":  # everything after is prompt text, even words starting with a dash
            words.extend(argv[index:])
            break
        if token.startswith("-") and token != "-":
            rest.append(token)
            if token in VALUE_OPTIONS and index < len(argv):
                rest.append(argv[index])
                index += 1
            continue
        if not words and token in SUBCOMMANDS:
            return argv, []  # a subcommand: typer parses it as before
        words.append(token)
    return rest, words


def unknown_option_message(argv: list[str], table: OptionTable) -> str | None:
    """One sentence about the first long option ``argv`` gives its command that it does not accept.

    Walks as click would: a value option consumes the next token, ``--`` ends options, a subcommand
    name switches the table; a close spelling is offered as a did-you-mean.
    """
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
                return _unknown(name, command, known)
            continue
        if not seen_positional and command == "" and token in table and token:
            command = token
            continue
        seen_positional = True
    return None


def _unknown(name: str, command: str, known: Mapping[str, bool]) -> str:
    longs = sorted(option for option in known if option.startswith("--") and option != INITIAL_OPTION)
    guess = difflib.get_close_matches(name, longs, n=1, cutoff=0.7)
    hint = f" (did you mean {guess[0]}?)" if guess else ""
    help_command = f"pi-compact {command} --help" if command else "pi-compact --help"
    return f"pi-compact: no such option {name}{hint}; see {help_command}"


# ---- the fast path of `compact` ----------------------------------------------------------------------
# Parsing a `compact` line with typer costs more than the whole dry run of a 1 MB session, so plain,
# well-formed lines skip it. Anything this walk is not sure of (--help, unknown or malformed options,
# odd values) is left to typer, so messages for bad input stay typer's; for what it accepts it gives
# exactly the keyword arguments typer would.

_FAST_FLAGS = {name: flag.dest for flag in COMPACT if flag.kind == "bool" for name in flag.names}
_FAST_INTS = {name: flag.dest for flag in COMPACT if flag.kind == "int" for name in flag.names}
_FAST_STRS = {name: flag.dest for flag in COMPACT if flag.kind == "str" for name in flag.names}


def _plain_int(text: str) -> bool:
    # Only canonical decimals: signs, spaces, underscores and leading zeros are left to typer.
    return text.isascii() and text.isdigit() and len(text) <= 18 and (text == "0" or text[0] != "0")


def fast_compact_args(argv: list[str]) -> dict[str, Any] | None:
    """Keyword arguments for ``compact.compact_command`` when ``argv`` is a plain ``compact`` call, else None."""
    if not argv or argv[0] != "compact" or any(name.endswith("_COMPLETE") for name in os.environ):
        return None  # *_COMPLETE: shell completion asks typer
    values: dict[str, Any] = {}
    session: str | None = None
    index = 1
    while index < len(argv):
        token = argv[index]
        index += 1
        name, equals, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _FAST_FLAGS and not equals:
            values[_FAST_FLAGS[name]] = True
            continue
        if name in _FAST_INTS or name in _FAST_STRS:
            if equals:
                value = inline
            elif index < len(argv):
                value = argv[index]
                index += 1
            else:
                return None
            if not value or value.startswith("-"):
                return None
            if name in _FAST_INTS:
                if not _plain_int(value):
                    return None
                values[_FAST_INTS[name]] = int(value)
            else:
                values[_FAST_STRS[name]] = value
            continue
        if not token or token.startswith("-") or session is not None:
            return None
        session = token
    if session is None:
        return None
    values["session"] = Path(session)
    return values


# ---- what the run does ---------------------------------------------------------------------------------


def read_piped_stdin(stream: TextIO) -> str | None:
    """The text piped into ``stream``; None for a terminal or when nothing (or only blanks) came."""
    try:
        if stream.isatty():
            return None
        text = stream.read()
    except (OSError, ValueError):  # closed or unreadable stdin: nothing was piped
        return None
    return text if text.strip() else None


@dataclass(frozen=True)
class StartPlan:
    """What to run: ``print_prompt`` for one printed answer, else the terminal with ``first_message``."""

    print_prompt: str | None = None
    first_message: str | None = None


def with_context(question: str, piped: str) -> str:
    """The message sent when text was piped in: the question, then the piped text as context."""
    body = piped.rstrip("\n")
    if not question.strip():
        return body
    return f"{question}\n\n<stdin>\n{body}\n</stdin>"


def plan_start(flag_prompt: str | None, words: list[str], piped: str | None) -> StartPlan:
    """Combine ``-p``, positional words and piped text into what the run does."""
    positional = " ".join(words)
    if flag_prompt is not None:
        question = f"{flag_prompt} {positional}".strip() if positional else flag_prompt
        return StartPlan(print_prompt=with_context(question, piped) if piped is not None else question)
    if piped is not None:  # no terminal to talk to: answer once and exit (`echo hi | pi-compact`)
        return StartPlan(print_prompt=with_context(positional, piped))
    return StartPlan(first_message=positional or None)
