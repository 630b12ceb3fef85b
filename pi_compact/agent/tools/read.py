"""``read``: show a text file with line numbers, a window at a time.

Output looks like ``cat -n``. At most ``MAX_LINES`` lines / ``MAX_BYTES`` bytes come back per call,
with a notice giving the ``offset`` to continue from; over-long lines are cut. Binary files and images
are refused with an error rather than dumped into the model's context, and so are paths that are not
regular files (FIFOs, devices), which could block or never end.

Memory stays bounded whatever the file: only the first bytes are sniffed for binary content, lines
before ``offset`` are skipped in chunks, at most ``_KEEP_LINE_BYTES`` of any shown line are held, and
the lines after the window are only counted, for at most ``COUNT_LIMIT_BYTES`` (past that the notice
gives the file size instead of a line total).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.regular import NotRegularFile, open_regular
from pi_compact.agent.tools.truncate import MAX_BYTES, MAX_LINE_CHARS, MAX_LINES, cut_line, format_size, head_count
from pi_compact.cancel import CancelToken

_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tiff"})
_BINARY_SNIFF_BYTES = 8192
_CHUNK = 256 * 1024
# Enough bytes for MAX_LINE_CHARS characters even when every one takes 4 bytes in UTF-8, plus "\r\n".
_KEEP_LINE_BYTES = MAX_LINE_CHARS * 4 + 8
COUNT_LIMIT_BYTES = 64 * 1024 * 1024
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))


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
        try:
            handle = open_regular(path)
        except NotRegularFile as exc:
            return error(f"{raw_path} is {exc.kind}, not a regular file; read only reads regular files.")
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if b"\x00" in handle.read(_BINARY_SNIFF_BYTES):
                return error(f"{raw_path} is a binary file ({format_size(size)}); only text files can be read.")
            handle.seek(0)
            skipped = _skip_lines(handle, offset - 1, ctx.cancel)
            wanted = min(limit, MAX_LINES) if limit is not None else MAX_LINES
            lines = _take_lines(handle, wanted) if skipped == offset - 1 else []
            after = _count_lines(handle, COUNT_LIMIT_BYTES, ctx.cancel)
        if ctx.cancelled:
            return error(f"Cancelled while reading {raw_path}.")
        return _window(raw_path, lines, offset, skipped + len(lines), after, size)


@dataclass(frozen=True)
class _Counted:
    """Lines after the window: ``lines`` of them, or at least that many when ``complete`` is False."""

    lines: int
    complete: bool


def _skip_lines(handle: BinaryIO, count: int, cancel: CancelToken | None) -> int:
    """Move past ``count`` lines in chunks, holding none of them; returns how many there were."""
    skipped = 0
    last = b""
    while skipped < count:
        if cancel is not None and cancel.cancelled:
            return skipped
        chunk = handle.read(_CHUNK)
        if not chunk:
            # A last line without a final newline is still a line.
            return skipped + (1 if last and not last.endswith(b"\n") else 0)
        last = chunk
        newlines = chunk.count(b"\n")
        if skipped + newlines < count:
            skipped += newlines
            continue
        position = -1
        for _ in range(count - skipped):
            position = chunk.index(b"\n", position + 1)
        handle.seek(position + 1 - len(chunk), os.SEEK_CUR)
        skipped = count
    return skipped


def _take_lines(handle: BinaryIO, wanted: int) -> list[str]:
    """Up to ``wanted`` lines, already cut to ``MAX_LINE_CHARS``, stopping once past ``MAX_BYTES``."""
    lines: list[str] = []
    used = 0
    while len(lines) < wanted and used <= MAX_BYTES:
        head = handle.readline(_KEEP_LINE_BYTES)
        if not head:
            break
        if head.endswith(b"\n") or len(head) < _KEEP_LINE_BYTES:
            line = cut_line(head.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r"))
        else:
            line = _cut_long_line(head, _drain_line(handle))
        lines.append(line)
        used += len(line.encode("utf-8")) + 1
    return lines


def _drain_line(handle: BinaryIO) -> int:
    """Read past the rest of an over-long line; returns its characters (the newline not counted)."""
    chars = 0
    while piece := handle.readline(_CHUNK):
        chars += _char_count(piece.removesuffix(b"\n").removesuffix(b"\r"))
        if piece.endswith(b"\n"):
            break
    return chars


def _cut_long_line(head: bytes, rest_chars: int) -> str:
    """A line too long to hold, shown like ``cut_line`` does: its start and how much was dropped."""
    total = _char_count(head) + rest_chars
    start = head.decode("utf-8", errors="replace")[:MAX_LINE_CHARS]
    return f"{start} [... line cut, {total - MAX_LINE_CHARS} more characters]"


def _char_count(data: bytes) -> int:
    """UTF-8 characters in ``data``: every byte that does not continue a multi-byte character."""
    return len(data.translate(None, _UTF8_CONTINUATION))


def _count_lines(handle: BinaryIO, budget: int, cancel: CancelToken | None) -> _Counted:
    """Count the lines left in ``handle``, reading at most ``budget`` bytes (and one to see the end)."""
    lines = 0
    read = 0
    last = b""
    while chunk := handle.read(min(_CHUNK, budget - read) or 1):
        if read >= budget or (cancel is not None and cancel.cancelled):
            return _Counted(lines, complete=False)  # the file goes on past what we agreed to read
        lines += chunk.count(b"\n")
        read += len(chunk)
        last = chunk
    return _Counted(lines + (1 if last and not last.endswith(b"\n") else 0), complete=True)


def _window(raw_path: str, lines: list[str], offset: int, seen: int, after: _Counted, size: int) -> ToolOutput:
    """The numbered ``lines`` starting at ``offset``, within the output budget, with a notice if more."""
    total = seen + after.lines
    if total == 0 and after.complete:
        return ToolOutput(f"[{raw_path} is empty.]", details={"totalLines": 0})
    if not lines:
        return error(f"offset {offset} is past the end of {raw_path}, which has {total} lines.")
    width = max(6, len(str(offset + len(lines))))
    numbered = [f"{number:>{width}}\t{line}" for number, line in enumerate(lines, start=offset)]
    shown = head_count(numbered)
    last = offset + shown - 1
    body = "\n".join(numbered[:shown])
    details: dict[str, Any] = {"firstLine": offset, "lastLine": last}
    if after.complete:
        details["totalLines"] = total
        if last < total:
            body += f"\n\n[Showing lines {offset}-{last} of {total}. Use offset={last + 1} to continue.]"
    else:
        body += (
            f"\n\n[Showing lines {offset}-{last} of a {format_size(size)} file (more than {total} lines). "
            f"Use offset={last + 1} to continue.]"
        )
    return ToolOutput(body, details=details)
