"""What the approval question shows: exactly what a call would run or write, all of it reachable.

Contract:
- ``preview(tool, args, cwd, limit)``: ``bash`` shows its command, ``write``/``edit`` a diff of the file
  they change and the file really written (``target``: resolved as the tool resolves it, a symlink's
  target named). With ``limit`` (the first view) at most that many lines are shown, from the top, and a
  very long line is cut with a count; ``limit=None`` (the ``v`` view) shows every line whole. Lines wrap
  under their margin, never cut at the terminal's edge.
- Nothing is hidden: hidden characters are marked and mixed-script words flagged (``ui.reveal``), with
  a warning line saying so; a run of blank lines is one line that counts them, so padding cannot push a
  command's start out of sight; a command of several lines says how many.
- A ``write`` says what it replaces whatever the file: "replaces a binary file of N bytes", "replaces
  N lines", "creates a new file" (``replaced``).
"""

from __future__ import annotations

import codecs
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from pi_compact.agent.tools.base import resolve_path
from pi_compact.ui.reveal import HIDDEN_STYLE, reveal, warnings
from pi_compact.ui.tool_view import hanging, read_before_write

PREVIEW_LINES = 40
LINE_CHARS = 1000  # the first view cuts a longer line (saying so); the full view shows it whole
BLANK_RUN = 3  # this many blank lines in a row or more are shown as one line that counts them
_MAX_DIFF_BYTES = 2_000_000  # a bigger file is previewed by its snippets: reading it would stall the question
_MAX_COUNT_BYTES = 256 * 1024 * 1024  # lines are counted this far into a file being replaced
_BINARY_PROBE = 64 * 1024


def target(raw: str, cwd: Path) -> str:
    """The file a ``write``/``edit`` of ``raw`` changes, resolved as the tool resolves it (``@``, ``~``,
    NFC/NFD names), with the file a symlink (of it or of a folder above it) really leads to."""
    path = resolve_path(raw, cwd)
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        real = path
    if path.is_symlink():
        return f"{path} (a symlink to {real})"
    return str(path) if real == path else f"{path} (really {real})"


def replaced(raw: str, cwd: Path) -> str:
    """What a ``write`` to ``raw`` would destroy, in words, whatever the file's size or kind (a binary
    file: any NUL byte, or bytes that are not UTF-8, in its first 64 KiB)."""
    path = resolve_path(raw, cwd)
    try:
        if not path.exists():
            return "creates a new file"
        if not path.is_file():
            return "targets something that is not a regular file (the write will be refused)"
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_BINARY_PROBE)
            if b"\0" in head or not _utf8_start(head, final=len(head) < _BINARY_PROBE):
                return f"replaces a binary file of {size:,} bytes"
            lines, last, read = head.count(b"\n"), head[-1:], len(head)
            while read < _MAX_COUNT_BYTES and (chunk := handle.read(1 << 20)):
                lines, last, read = lines + chunk.count(b"\n"), chunk[-1:], read + len(chunk)
    except (OSError, ValueError) as exc:
        return f"replaces a file that cannot be read ({getattr(exc, 'strerror', None) or exc})"
    if size == 0:
        return "replaces an empty file"
    lines += 0 if last == b"\n" else 1
    more = "more than " if read < size else ""
    return f"replaces {more}{lines:,} line{'' if lines == 1 else 's'} ({size:,} bytes)"


def _utf8_start(data: bytes, final: bool) -> bool:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=final)
    except UnicodeDecodeError:
        return False
    return True


def edit_diff(path: str, old: str, new: str, cwd: Path) -> list[str]:
    """The edit as diff lines of the file, so hunk headers give the file's line numbers; the snippets' own
    diff when the file is over 2 MB or cannot be read (an edit whose ``old`` is not in the file exactly
    once is refused before the question: ``tools.precheck``)."""
    try:
        file = resolve_path(path, cwd)
        before = file.read_text(encoding="utf-8") if file.stat().st_size <= _MAX_DIFF_BYTES else ""
    except (OSError, UnicodeDecodeError, ValueError):
        before = ""
    before, old, new = (text.replace("\r\n", "\n") for text in (before, old, new))  # as the tool matches
    if old and before.count(old) == 1:
        return _diff(_split(before), _split(before.replace(old, new, 1)), path)
    return _diff(_split(old), _split(new), path)


def _diff(before: list[str] | None, after: list[str], name: str) -> list[str]:
    """Unified diff lines without the two file-name lines (None: the file is new)."""
    lines = list(difflib.unified_diff(before or [], after, fromfile="/dev/null" if before is None else f"a/{name}",
                                      tofile=f"b/{name}", lineterm=""))
    return lines[2:]


def _split(text: str) -> list[str]:
    """Lines as the shell and the file see them: only a newline ends one (a lone CR or a Unicode line
    separator is a hidden character, marked), and a final newline ends the last line, not a new one."""
    text = text.replace("\r\n", "\n")
    return text.removesuffix("\n").split("\n") if text else []


def _collapse(lines: list[tuple[str, str]], prefix: int) -> list[tuple[str, str, int]]:
    """(text, style, blank lines it stands for): a run of BLANK_RUN or more blank lines (the same diff
    sign, ``prefix`` characters, before them) becomes one row."""
    rows: list[tuple[str, str, int]] = []
    index = 0
    while index < len(lines):
        text, style = lines[index]
        end = index
        while end < len(lines) and lines[end][0][:prefix] == text[:prefix] and _blank(lines[end][0][prefix:]):
            end += 1
        if end - index >= BLANK_RUN:
            rows.append((text[:prefix], style, end - index))
            index = end
        else:
            rows.append((text, style, 0))
            index += 1
    return rows


def _blank(text: str) -> bool:
    return not text.strip(" \t")  # str.strip would also take no-break and other spaces, which are marked


def _lines_view(lines: list[tuple[str, str]], margin: str, limit: int | None, prefix: int = 0) -> RenderableType:
    """Lines behind a 4-cell margin, hidden characters marked, blank runs counted; with ``limit`` the first
    ``limit`` rows and each line up to LINE_CHARS, saying what more there is."""
    rows = _collapse(lines, prefix)
    hidden_rows = 0 if limit is None else max(0, len(rows) - limit)
    view = Text()
    for number, (text, style, blanks) in enumerate(rows[: len(rows) - hidden_rows]):
        if number:
            view.append("\n")
        view.append(margin if number == 0 else "    ", style="dim")
        if blanks:
            view.append(text, style=style)
            view.append(f"⟨{blanks} blank lines⟩", style=HIDDEN_STYLE)
            continue
        cut = limit is not None and len(text) > LINE_CHARS
        view.append_text(reveal(text[:LINE_CHARS] if cut else text, style))
        if cut:
            view.append(f" … {len(text) - LINE_CHARS:,} more characters on this line (v views all)", style="dim italic")
    if hidden_rows:
        view.append(f"\n    … {hidden_rows:,} more lines (v views all)", style="dim italic")
    return hanging(view)


def _diff_style(line: str) -> str:
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return "cyan" if line.startswith("@@") else "dim"


def _diff_view(body: list[str], header: str, limit: int | None) -> RenderableType:
    return _lines_view([(header, "dim"), *((line, _diff_style(line)) for line in body)], "  ⎿ ", limit, prefix=1)


def _count(lines: list[str]) -> str:
    return f"{len(lines):,} line{'' if len(lines) == 1 else 's'}"


def _notes(*texts: str) -> list[RenderableType]:
    notes = warnings("\n".join(texts))
    return [hanging(Text("\n".join(f"  ⚠ {note}" for note in notes), style="bold yellow"))] if notes else []


def _written(path: str, cwd: Path) -> Text:
    writes = Text("  writes ", style="dim")
    writes.append_text(reveal(target(path, cwd), "bold") if path else Text("(no path given)", style="bold"))
    return writes


def preview(tool_name: str, args: Mapping[str, Any], cwd: Path, limit: int | None = PREVIEW_LINES) -> Group:
    """What the call would do (see the module contract)."""
    path = str(args.get("path", ""))
    shown_path = path.replace("\n", " ")
    if tool_name in ("edit", "write"):
        if tool_name == "edit":
            old, new = str(args.get("oldText", "")), str(args.get("newText", ""))
            if old == new:  # an empty diff would look like nothing to approve, or a broken preview
                note = Text("  ", style="yellow")
                note.append_text(reveal(f"edit {shown_path}: no change (oldText and newText are the same)"))
                return Group(note, _written(path, cwd))
            view = _diff_view(edit_diff(path, old, new, cwd), f"edit {shown_path}", limit)
            return Group(view, _written(path, cwd), *_notes(path, old, new))
        content = str(args.get("content", ""))
        after = _split(content)
        what = replaced(path, cwd) if path else "no path given"
        header = f"write {shown_path}: {what} with {_count(after)}"
        before = None if what.startswith("replaces a binary") else read_before_write(args, cwd)  # no diff of bytes
        diff = _diff(None if before is None else _split(before), after, path)
        return Group(_diff_view(diff, header, limit), _written(path, cwd), *_notes(path, content))
    command = str(args.get("command", ""))
    lines = _split(command) or [""]
    parts: list[RenderableType] = []
    if len(lines) > 1:
        blank = sum(1 for line in lines if _blank(line))
        parts.append(Text(f"  bash command of {_count(lines)}" + (f", {blank:,} of them blank" if blank else ""),
                          style="bold"))
    parts.append(_lines_view([(line, "bold") for line in lines], "  $ ", limit))
    return Group(*parts, *_notes(command))


__all__ = ["PREVIEW_LINES", "edit_diff", "preview", "replaced", "target"]
