"""``grep``: search file contents for a regex (or literal text), one ``path:line: text`` per match.

Skips binary files and the directories in ``SKIPPED_DIRS``; files are read as UTF-8 with undecodable
bytes replaced, so one odd file never aborts a search. Stops at ``limit`` matches with a notice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.truncate import head_count
from pi_compact.agent.tools.walk import SKIPPED_DIRS, compile_glob, is_binary, relative, walk

DEFAULT_LIMIT = 100
MAX_MATCH_LINE_CHARS = 500


class GrepTool:
    name = "grep"
    description = (
        "Search file contents with a Python regular expression and return matching lines as "
        "`path:line: text`. Searches a directory recursively (skipping binary files and "
        f"{', '.join(sorted(SKIPPED_DIRS))}) or a single file. Set `literal` to search for plain text."
    )
    parameters = object_schema(
        required=["pattern"],
        pattern=("string", "Python regular expression (plain text when literal is true)."),
        path=("string", "File or directory to search (default: the working directory)."),
        glob=("string", "Only search files whose path matches this glob, e.g. `*.py`."),
        ignoreCase=("boolean", "Match regardless of letter case."),
        literal=("boolean", "Treat pattern as plain text instead of a regex."),
        limit=("integer", f"Maximum matches to return (default {DEFAULT_LIMIT})."),
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern: str = args["pattern"]
        raw_path: str = args.get("path") or "."
        limit: int = args.get("limit") or DEFAULT_LIMIT
        if limit < 1:
            return error(f"limit must be 1 or more, got {limit}.")
        flags = re.IGNORECASE if args.get("ignoreCase") else 0
        try:
            regex = re.compile(re.escape(pattern) if args.get("literal") else pattern, flags)
        except re.error as exc:
            return error(f"Invalid regex {pattern!r}: {exc}; fix it or set literal=true for plain text.")
        root = resolve_path(raw_path, ctx.cwd)
        if not root.exists():
            return error(f"Path not found: {raw_path}")
        glob = args.get("glob")
        matcher = compile_glob(glob) if glob else None
        lines: list[str] = []
        more = False
        for rel, path in _candidate_files(root, ctx):
            if matcher is not None and not matcher.match(rel):
                continue
            for line_no, line in _matching_lines(path, regex):
                if len(lines) == limit:
                    more = True
                    break
                lines.append(f"{rel}:{line_no}: {_cut(line)}")
            if more:
                break
        if ctx.cancelled:
            return error(f"Cancelled while searching {raw_path}.")
        if not lines:
            return ToolOutput(f"No matches for {pattern!r} in {raw_path}.", details={"matches": 0})
        shown = head_count(lines)
        body = "\n".join(lines[:shown])
        if more or shown < len(lines):
            body += (
                f"\n\n[Showing the first {shown} matches; there are more. Narrow the pattern, path or glob, "
                "or raise limit.]"
            )
        return ToolOutput(body, details={"matches": shown, "truncated": more or shown < len(lines)})


def _candidate_files(root: Path, ctx: ToolContext) -> Iterator[tuple[str, Path]]:
    """``(relative name, path)`` for each text file to search; a single file is named by itself."""
    if root.is_file():
        if not is_binary(root):
            yield root.name, root
        return
    for path, is_dir in walk(root, ctx.cancel):
        if not is_dir and path.is_file() and not is_binary(path):
            yield relative(path, root), path


def _matching_lines(path: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        for line_no, line in enumerate(handle, start=1):
            text = line.rstrip("\r\n")
            if regex.search(text):
                yield line_no, text


def _cut(line: str) -> str:
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return line
    return f"{line[:MAX_MATCH_LINE_CHARS]} [... {len(line) - MAX_MATCH_LINE_CHARS} more characters]"
