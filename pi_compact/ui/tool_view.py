"""How a tool call and its result look in the terminal: the call line and the collapsed result.

Contract (rich ``Text`` only, never markup parsed from tool text):
- ``call_line(name, args)``: ``▸ tool argument``; ``grep``/``find`` show their pattern and where they look.
- ``result_view(name, args, result, is_error, before=...)`` returns a ``ToolView``: what to print now
  (collapsed) and the full text, kept so Ctrl-O (or ``/expand``) can show it later.
  ``edit`` and ``write`` show a coloured unified diff (``edit`` from the tool's ``details["diff"]``;
  ``write`` against ``before``, the file's text read just before the call, or all-new lines);
  ``bash`` shows its LAST lines, where the verdict of a build or test run is; others their first lines.
- ``hanging(view)`` lays a result out for printing: a long line wraps under its margin.
- ``read_before_write(args, cwd)`` is the only I/O: the old text of the file a ``write`` will replace.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from pi_compact.agent.tools.base import resolve_path
from pi_compact.ui.renderer_text import clean, key_argument, result_text

RESULT_LINES = 4  # a plain tool result is collapsed to this many lines
DIFF_LINES = 12  # a diff shows more: it is what the user wants to check
MAX_BEFORE_BYTES = 512 * 1024  # larger files are shown as all-new lines rather than read twice


@dataclass(frozen=True)
class ToolView:
    """A rendered result: ``shown`` is printed now; ``full`` is everything, when something was hidden."""

    shown: Text
    full: Text | None = None


def call_line(name: str, args: Mapping[str, Any]) -> Text:
    """One line per tool call: ``▸ tool key-argument`` (with the pattern for ``grep``/``find``)."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append("▸ ", style="cyan")
    line.append(clean(name), style="bold")
    pattern = args.get("pattern")
    if name in ("grep", "find") and isinstance(pattern, str):
        line.append(" " + clean(pattern).replace("\n", " "), style="bold")
        where = args.get("path")
        if isinstance(where, str) and where.strip():
            line.append(" in " + clean(where).strip())
        glob = args.get("glob")
        if isinstance(glob, str) and glob.strip():
            line.append(f" ({clean(glob).strip()})", style="dim")
        return line
    argument = key_argument(args)
    if argument:
        line.append(" " + argument)
    return line


def read_before_write(args: Mapping[str, Any], cwd: Path) -> str | None:
    """The current text of the file ``write`` is about to replace (None: new, unreadable or too large)."""
    raw = args.get("path")
    if not isinstance(raw, str) or not raw:
        return None
    path = resolve_path(raw, cwd)  # as the write tool resolves it: ``@``, ``~``, NFC/NFD spellings
    try:
        if not path.is_file() or path.stat().st_size > MAX_BEFORE_BYTES:
            return None
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def write_diff(path: str, before: str | None, after: str) -> str:
    """The unified diff of a write (against an empty file when there was none)."""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else f"a/{path}", tofile=f"b/{path}", n=3,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return "dim"


def _lines(lines: list[str], styles: list[str], limit: int | None, *, tail: bool = False) -> Text:
    """Indented lines (``⎿`` on the first), cut to ``limit`` with a count of what was hidden."""
    hidden = 0 if limit is None else max(0, len(lines) - limit)
    keep = range(hidden, len(lines)) if tail else range(len(lines) - hidden)
    out = Text(no_wrap=True, overflow="ellipsis")
    note = f"… {hidden} {'earlier' if tail else 'more'} line{'' if hidden == 1 else 's'} (Ctrl-O to expand)"
    rows: list[tuple[str, str]] = [(note, "dim italic")] if hidden and tail else []
    rows += [(lines[i].expandtabs(4), styles[i]) for i in keep]
    if hidden and not tail:
        rows.append((note, "dim italic"))
    for index, (text, style) in enumerate(rows):
        out.append("  ⎿ " if index == 0 else "    ", style="dim")
        out.append(text, style=style)
        if index < len(rows) - 1:
            out.append("\n")
    return out


def hanging(view: Text) -> RenderableType:
    """``view`` (lines behind a 4-cell ``  ⎿ ``/``    `` margin) laid out so a line longer than the terminal
    wraps under its own margin, not at column 0, where it would read as the agent's own text."""
    return _Hanging(view)


class _Hanging:
    """Each line's body wrapped to the width left of its margin; nothing padded (a copied line has no
    trailing spaces)."""

    def __init__(self, view: Text) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = max(8, options.max_width - 4)
        for line in self.view.split("\n"):
            margin, body = line[:4], line[4:]
            parts = list(body.wrap(console, room, overflow="fold")) if body.plain else [Text()]
            for index, part in enumerate(parts):
                part.rstrip()
                yield Text.assemble(margin if index == 0 else Text("    "), part, no_wrap=True)


def _collapsed(lines: list[str], styles: list[str], limit: int, *, tail: bool = False) -> ToolView:
    shown = _lines(lines, styles, limit, tail=tail)
    return ToolView(shown, _lines(lines, styles, None) if len(lines) > limit else None)


def diff_view(diff: str, header: str, limit: int | None = DIFF_LINES) -> Text:
    """A unified diff as coloured, indented lines under ``header`` (file name lines left out)."""
    body = [line for line in clean(diff).splitlines() if not line.startswith(("---", "+++"))]
    return _lines([header, *body], ["dim", *map(_diff_style, body)], limit)


def result_view(
    name: str, args: Mapping[str, Any], result: Mapping[str, Any], is_error: bool, *, before: str | None = None,
) -> ToolView:
    """The collapsed view of one tool result (see the module contract)."""
    text = result_text(result).rstrip()
    if not is_error and name in ("edit", "write"):
        details = result.get("details")
        diff = details.get("diff") if isinstance(details, Mapping) else None
        if not isinstance(diff, str) and name == "write" and isinstance(args.get("content"), str):
            diff = write_diff(str(args.get("path", "")), before, str(args["content"]))
        if isinstance(diff, str) and diff.strip():
            body = [line for line in clean(diff).splitlines() if not line.startswith(("---", "+++"))]
            lines = [text.splitlines()[0] if text else name, *body]
            return _collapsed(lines, ["dim", *map(_diff_style, body)], DIFF_LINES)
    lines = text.splitlines() or ["(no output)"]
    if name == "bash" and len(lines) > 2 and lines[-1].startswith("[") and not lines[-2].strip():
        del lines[-2]  # the blank line before "[Exit code: N]" would take one of the few lines shown
    styles = ["red" if is_error else "dim"] * len(lines)
    return _collapsed(lines, styles, RESULT_LINES, tail=name == "bash")


__all__ = ["ToolView", "call_line", "diff_view", "read_before_write", "result_view", "write_diff"]
