"""``read``: show a text file with line numbers, a window at a time.

Output looks like ``cat -n``. At most ``MAX_LINES`` lines / ``MAX_BYTES`` bytes come back per call,
with a notice giving the ``offset`` to continue from; over-long lines are cut. Binary files and images
are refused with an error rather than dumped into the model's context.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.truncate import MAX_BYTES, MAX_LINES, cut_line, format_size, head_count

_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tiff"})
_BINARY_SNIFF_BYTES = 8192


class ReadTool:
    name = "read"
    description = (
        "Read a text file and return its lines prefixed with line numbers. Returns at most "
        f"{MAX_LINES} lines or {MAX_BYTES // 1024} KB per call; for long files continue with `offset` "
        "(the next line number) as the result tells you. Use `limit` to read only part of a file."
    )
    parameters = object_schema(
        required=["path"],
        path=("string", "File to read, relative to the working directory or absolute."),
        offset=("integer", "First line to show, counting from 1 (default 1)."),
        limit=("integer", "Maximum number of lines to show."),
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        raw_path: str = args["path"]
        offset: int = args.get("offset") or 1
        limit: int | None = args.get("limit")
        if offset < 1:
            return error(f"offset must be 1 or more (it counts lines from 1), got {offset}.")
        if limit is not None and limit < 1:
            return error(f"limit must be 1 or more, got {limit}.")
        path = resolve_path(raw_path, ctx.cwd)
        if not path.exists():
            return error(f"File not found: {raw_path}")
        if path.is_dir():
            return error(f"{raw_path} is a directory; use the ls tool to list it.")
        if path.suffix.lower() in _IMAGE_SUFFIXES:
            return error(f"{raw_path} is an image; reading images is not supported, only text files.")
        data = path.read_bytes()
        if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
            size = format_size(len(data))
            return error(f"{raw_path} is a binary file ({size}); only text files can be read.")
        return _window(raw_path, data.decode("utf-8", errors="replace"), offset, limit)


def _window(raw_path: str, text: str, offset: int, limit: int | None) -> ToolOutput:
    """The numbered lines from ``offset`` on, within ``limit`` and the output budget."""
    lines = text.split("\n")
    if lines[-1] == "":  # a final newline ends the last line; it does not start a new one
        lines.pop()
    total = len(lines)
    if total == 0:
        return ToolOutput(f"[{raw_path} is empty.]", details={"totalLines": 0})
    if offset > total:
        return error(f"offset {offset} is past the end of {raw_path}, which has {total} lines.")
    wanted = lines[offset - 1 : offset - 1 + limit] if limit is not None else lines[offset - 1 :]
    width = max(6, len(str(offset + len(wanted))))
    numbered = [
        f"{number:>{width}}\t{cut_line(line.removesuffix(chr(13)))}"
        for number, line in enumerate(wanted, start=offset)
    ]
    shown = head_count(numbered)
    last = offset + shown - 1
    body = "\n".join(numbered[:shown])
    if last < total:
        body += f"\n\n[Showing lines {offset}-{last} of {total}. Use offset={last + 1} to continue.]"
    return ToolOutput(body, details={"totalLines": total, "firstLine": offset, "lastLine": last})
