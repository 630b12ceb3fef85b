"""Parsing a session file's lines from bytes, one at a time, tolerating damage (no file I/O here).

A bad line costs that line only: it is skipped with a warning naming file and line number, and entries
parented to a skipped one are relinked to its parent (``Relinker``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pi_compact.session.entries import Entry
from pi_compact.session.shape import entry_problem


@dataclass(frozen=True)
class LoadedFile:
    """What parsing a session file produced."""

    header: Entry | None
    entries: list[Entry]
    warnings: tuple[str, ...]
    ends_with_newline: bool
    size: int  # bytes parsed
    blank: bool  # nothing but whitespace (or nothing at all)


# Each line is decoded on its own: a last line cut inside a multi-byte character by a crash, or one stray
# invalid byte, costs that line only, never the file. A line is skipped when it is not UTF-8, not JSON, not an
# object, nested too deeply, or an entry of the wrong shape (``shape.py``). An unterminated last line that fails
# is reported as an interrupted write; a blank line is ignored silently.
def parse_line(number: int, raw: bytes, name: str) -> tuple[Entry | None, str | None]:
    """One line (with its newline, if it has one): the entry, or a warning; both None when blank.

    An entry of the wrong shape comes back with its warning, so that ``Relinker`` can read its ids.
    """
    unterminated = raw[-1:] != b"\n"
    body = raw if unterminated else raw[:-1]
    incomplete = f"{name}: line {number} is incomplete (interrupted write); ignored it."
    try:
        line = body.decode("utf-8")
    except UnicodeDecodeError:
        return None, incomplete if unterminated else f"{name}: line {number} is not valid UTF-8 text; skipped it."
    if not line.strip():
        return None, None
    try:
        value = json.loads(line)
    except RecursionError:
        return None, f"{name}: line {number} is nested too deeply; skipped it."
    except ValueError:
        return None, incomplete if unterminated else f"{name}: line {number} is not valid JSON; skipped it."
    if not isinstance(value, dict):
        return None, f"{name}: line {number} is not a JSON object; skipped it."
    return value, line_problem(number, value, name)


def line_problem(number: int, value: Entry, name: str) -> str | None:
    """The warning for a parsed object that is no usable entry, or None."""
    problem = entry_problem(value)
    return None if problem is None else f"{name}: line {number} cannot be used ({problem}); skipped it."


# A skipped entry whose id is still readable does not cut the conversation in two: entries naming it as their
# parent are linked to its parent instead, in memory. pi keeps such entries, so this gives the same path through
# the file.
class Relinker:
    """Links the children of skipped entries to the nearest kept ancestor."""

    def __init__(self) -> None:
        self.skipped: dict[str, str | None] = {}  # a skipped entry's id -> its nearest kept ancestor

    def skip(self, value: Entry) -> None:
        entry_id = value.get("id")
        if type(entry_id) is str:
            parent = value.get("parentId")
            self.skipped[entry_id] = self.parent(parent) if type(parent) is str else None

    def parent(self, parent: str) -> str | None:
        """The id to use for a ``parentId`` read from the file."""
        return self.skipped.get(parent, parent)


def parse_lines(lines: Iterable[bytes], name: str) -> LoadedFile:
    """Parse a session file's lines: header first, bad lines skipped with a warning."""
    warnings: list[str] = []
    parsed: list[Entry] = []
    relinker = Relinker()
    size = 0
    last = b""
    for number, raw in enumerate(lines, start=1):
        size += len(raw)
        last = raw
        value, warning = parse_line(number, raw, name)
        if warning is not None:
            warnings.append(warning)
            if value is not None:
                relinker.skip(value)
        elif value is not None:
            if relinker.skipped:
                parent = value.get("parentId")
                if type(parent) is str and parent in relinker.skipped:
                    value["parentId"] = relinker.parent(parent)
            parsed.append(value)
    ends_with_newline = size == 0 or last.endswith(b"\n")
    blank = not parsed and not warnings
    if not parsed or parsed[0].get("type") != "session" or not isinstance(parsed[0].get("id"), str):
        return LoadedFile(None, [], tuple(warnings), ends_with_newline, size, blank)
    return LoadedFile(parsed[0], parsed[1:], tuple(warnings), ends_with_newline, size, blank)
