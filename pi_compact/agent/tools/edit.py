"""``edit``: replace one exact, unique occurrence of ``oldText`` with ``newText`` in a file.

Exactness is the safety net: if ``oldText`` is missing or ambiguous nothing is written and the error
says which, so the model re-reads or adds context. Files with CRLF line endings or a UTF-8 BOM keep
them; the model's LF-only text still matches. ``details["diff"]`` carries a small unified diff.
The file is replaced atomically (``atomic_write``), so a kill mid-call never leaves it truncated, and
paths that are not regular files (FIFOs, devices) are refused before anything is read. ``check`` runs
the same reading and matching without writing, so an edit that cannot apply is refused before the
approval question (``base.precheck``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_compact.agent.tools.atomic_write import replace_file
from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.regular import NotRegularFile, open_regular
from pi_compact.agent.tools.truncate import plural

_BOM = "\ufeff"


class EditTool:
    name = "edit"
    description = (
        "Replace an exact piece of text in a file. `oldText` must match the file character for "
        "character (including indentation) and occur exactly once; include a few surrounding lines to "
        "make it unique. Read the file first if you are unsure of its current contents."
    )
    parameters = object_schema(
        required=["path", "oldText", "newText"],
        path=("string", "File to edit, relative to the working directory or absolute."),
        oldText=("string", "Exact text to find; must occur exactly once in the file."),
        newText=("string", "Text to put in its place."),
    )

    def check(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput | None:
        """The error this edit would end in, found without writing (None: it applies)."""
        planned = _plan(args, ctx)
        return planned if isinstance(planned, ToolOutput) else None

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        planned = _plan(args, ctx)
        if isinstance(planned, ToolOutput):
            return planned
        on_disk = planned.after.replace("\n", "\r\n") if planned.crlf else planned.after
        replace_file(planned.path, (planned.bom + on_disk).encode("utf-8"))
        raw_path, before, start = planned.raw_path, planned.before, planned.start
        first_line = before.count("\n", 0, start) + 1
        summary = (
            f"Edited {raw_path}: replaced {plural(_line_count(planned.old_text), 'line')} with "
            f"{plural(_line_count(planned.new_text), 'line')} at line {first_line}."
        )
        diff = _unified_diff(raw_path, before, planned.after)
        return ToolOutput(summary, details={"diff": diff, "firstChangedLine": first_line})


@dataclass(frozen=True)
class _Planned:
    """An edit that applies: the file, its text before and after (LF endings), and how it is stored."""

    path: Path
    raw_path: str
    old_text: str
    new_text: str
    before: str
    after: str
    start: int  # where old_text begins in before
    bom: str
    crlf: bool


def _plan(args: Mapping[str, Any], ctx: ToolContext) -> _Planned | ToolOutput:
    """Read the file and find ``oldText``: the edit to write, or the error that stops it."""
    raw_path: str = args["path"]
    old_text: str = args["oldText"].replace("\r\n", "\n")
    new_text: str = args["newText"].replace("\r\n", "\n")
    path = resolve_path(raw_path, ctx.cwd)
    if not path.exists():
        return error(f"File not found: {raw_path}")
    if not old_text:
        return error("oldText is empty; give the exact text to replace (use write to create a file).")
    if old_text == new_text:
        return error(f"oldText and newText are identical, so {raw_path} would not change.")
    try:
        with open_regular(path) as handle:
            content = handle.read()
    except NotRegularFile as exc:
        return error(f"{raw_path} is {exc.kind}, not a regular file; edit only changes regular files.")
    raw = content.decode("utf-8")  # strict: never rewrite a file we could not decode
    bom = _BOM if raw.startswith(_BOM) else ""
    crlf = "\r\n" in raw
    before = raw.removeprefix(bom).replace("\r\n", "\n") if crlf else raw.removeprefix(bom)
    count = before.count(old_text)
    if count == 0:
        return error(f"oldText not found in {raw_path}; read the file and copy the text exactly.")
    if count > 1:
        return error(
            f"oldText occurs {count} times in {raw_path}; add surrounding lines to make it unique."
        )
    start = before.index(old_text)
    after = before[:start] + new_text + before[start + len(old_text) :]
    return _Planned(path, raw_path, old_text, new_text, before, after, start, bom, crlf)


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _unified_diff(name: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
        n=3,
    )
    # A last line without a newline would glue onto the next diff line; give every line its own.
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
