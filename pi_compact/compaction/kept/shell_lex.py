"""A shell command line split into simple commands, for reading what it writes (pure).

Only what ``shell_writes`` needs, and strict: ``shlex`` cannot tell a quoted ``'>'`` (an argument of
``grep``) from a redirect, so this small lexer keeps operators and quoted words apart. A line it cannot
read with certainty (unbalanced quotes, command substitution ``$(...)`` or backticks, subshells,
heredocs it cannot pair with their bodies) gives ``None``: the caller then assumes no write at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Longest first: the lexer takes the first operator the text starts with.
_OPERATORS = (
    "&>>", "<<<", "<<-", "&&", "||", ";;", "|&", ">>", ">|", ">&", "&>", "<<", "<&", "<>",
    ">", "<", "|", "&", ";", "(", ")",
)
_OPERATOR_STARTS = frozenset(op[0] for op in _OPERATORS)
SEPARATORS = frozenset({"&&", "||", ";;", "|&", "|", "&", ";", "\n"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")


class Unreadable(ValueError):
    """The command line uses shell syntax this lexer does not read with certainty."""


@dataclass(frozen=True)
class Simple:
    """One simple command: its words, the files its redirects write, its heredoc bodies, and the
    separators around it ('' at the line's ends)."""

    words: tuple[str, ...]
    written: tuple[str, ...]
    heredocs: tuple[str, ...]
    before: str
    after: str


def _heredoc_bodies(command: str) -> tuple[str, list[str]]:
    """``command`` without its heredoc bodies, and the bodies in order."""
    lines = command.split("\n")
    kept: list[str] = []
    bodies: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        for match in _HEREDOC.finditer(line.replace("<<<", "   ")):
            delimiter, body = match.group(3), []
            while index < len(lines) and lines[index].strip() != delimiter:
                body.append(lines[index])
                index += 1
            if index >= len(lines):
                raise Unreadable("a heredoc without its end")
            index += 1  # the delimiter line
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


def tokens(command: str) -> tuple[list[tuple[bool, str]], list[str]]:
    """(is operator, text) of each token of ``command`` (heredoc bodies removed), and the bodies."""
    text, bodies = _heredoc_bodies(command)
    if "$(" in text or "`" in text:
        raise Unreadable("command substitution")
    found: list[tuple[bool, str]] = []
    word: list[str] = []
    started = False
    i = 0

    def end_word() -> None:
        nonlocal started
        if started:
            found.append((False, "".join(word)))
        word.clear()
        started = False

    while i < len(text):
        char = text[i]
        if char in " \t\r":
            end_word()
        elif char == "\n":
            end_word()
            found.append((True, "\n"))
        elif char == "#" and not started:
            while i + 1 < len(text) and text[i + 1] != "\n":
                i += 1
        elif char == "\\":
            if i + 1 < len(text) and text[i + 1] != "\n":
                word.append(text[i + 1])
                started = True
            i += 1
        elif char == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise Unreadable("an unclosed quote")
            word.append(text[i + 1 : close])
            started, i = True, close
        elif char == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`':
                    i += 1
                word.append(text[i])
                i += 1
            if i >= len(text):
                raise Unreadable("an unclosed quote")
            started = True
        else:
            operator = next((op for op in _OPERATORS if text.startswith(op, i)), None) \
                if char in _OPERATOR_STARTS else None  # most characters start none: not tried 21 times
            if operator is None:
                word.append(char)
                started = True
            else:
                if operator in ("(", ")"):
                    raise Unreadable("a subshell or function")
                if operator[0] in "<>" and started and "".join(word).isdigit():
                    word.clear()  # a file descriptor (``2>``), not a word
                    started = False
                end_word()
                found.append((True, operator))
                i += len(operator) - 1
        i += 1
    end_word()
    return found, bodies


def simple_commands(command: str) -> list[Simple]:
    """The simple commands of ``command`` in order; raises ``Unreadable``."""
    found, bodies = tokens(command)
    commands: list[Simple] = []
    words: list[str] = []
    written: list[str] = []
    heredocs: list[str] = []
    before = ""
    index = 0

    def target() -> str:
        if index + 1 >= len(found) or found[index + 1][0]:
            raise Unreadable("a redirect without its file")
        return found[index + 1][1]

    while index < len(found):
        is_operator, text = found[index]
        if not is_operator:
            words.append(text)
        elif text in SEPARATORS:
            if words or written:
                commands.append(Simple(tuple(words), tuple(written), tuple(heredocs), before, text))
            words, written, heredocs, before = [], [], [], text
        elif text in WRITE_REDIRECTS or text == ">&":
            name = target()
            if text != ">&" or not (name.isdigit() or name == "-"):  # ``>&2`` copies a descriptor
                written.append(name)
            index += 1
        elif text in ("<<", "<<-"):
            target()
            if not bodies:
                raise Unreadable("a heredoc without its body")
            heredocs.append(bodies.pop(0))
            index += 1
        else:  # ``<``, ``<&``, ``<>``, ``<<<``: an input, nothing written
            target()
            index += 1
        index += 1
    if words or written:
        commands.append(Simple(tuple(words), tuple(written), tuple(heredocs), before, ""))
    if bodies:
        raise Unreadable("heredoc bodies that no command took")
    return commands


__all__ = ["SEPARATORS", "Simple", "Unreadable", "simple_commands", "tokens"]
