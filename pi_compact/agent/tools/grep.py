"""``grep``: search file contents for a regex (or literal text), one ``path:line: text`` per match.

Skips binary files and the directories in ``SKIPPED_DIRS``; files are read as UTF-8 with undecodable
bytes replaced, so one odd file never aborts a search. Stops at ``limit`` matches with a notice.

The search itself runs in a child process (``grep_worker``) because a Python regex cannot be stopped
once it starts backtracking: the child is killed when the call is cancelled or when it has run for
``TIME_LIMIT_S`` seconds, and the matches it had found by then are still shown.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.regular import file_kind
from pi_compact.agent.tools.truncate import head_count
from pi_compact.agent.tools.walk import SKIPPED_DIRS
from pi_compact.cancel import CancelToken

DEFAULT_LIMIT = 100
TIME_LIMIT_S = 30.0
_WORKER = "pi_compact.agent.tools.grep_worker"
# The directory holding the pi_compact package: the worker must import this same copy of it.
_PACKAGE_HOME = str(Path(__file__).resolve().parents[3])
_POLL_S = 0.05


class GrepTool:
    name = "grep"
    description = (
        "Search file contents with a Python regular expression and return matching lines as "
        "`path:line: text`. Searches a directory recursively (skipping binary files and "
        f"{', '.join(sorted(SKIPPED_DIRS))}) or a single file. Set `literal` to search for plain text. "
        f"A search is stopped after {TIME_LIMIT_S:g} seconds."
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
        source = re.escape(pattern) if args.get("literal") else pattern
        ignore_case = bool(args.get("ignoreCase"))
        try:  # compiled here too, so a bad pattern is reported before any process starts
            re.compile(source, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            return error(f"Invalid regex {pattern!r}: {exc}; fix it or set literal=true for plain text.")
        root = resolve_path(raw_path, ctx.cwd)
        if not root.exists():
            return error(f"Path not found: {raw_path}")
        kind = file_kind(root.stat().st_mode)
        if kind not in ("a regular file", "a directory"):
            return error(f"{raw_path} is {kind}; grep searches regular files and directories.")
        request = {
            "pattern": source,
            "ignore_case": ignore_case,
            "root": str(root),
            "glob": args.get("glob"),
            "limit": limit,
        }
        time_limit = TIME_LIMIT_S  # read at call time, so it can be changed (tests make it short)
        found = _run_worker(request, time_limit, ctx.cancel)
        if found.stopped == "cancelled":
            return error(f"Cancelled while searching {raw_path}.")
        if found.failure is not None:
            return error(f"grep failed: {found.failure}")
        lines = [f"{rel}:{line_no}: {text}" for rel, line_no, text in found.matches]
        if found.stopped == "time":
            return _timed_out(lines, pattern, raw_path, time_limit)
        if not lines:
            return ToolOutput(f"No matches for {pattern!r} in {raw_path}.", details={"matches": 0})
        shown = head_count(lines)
        body = "\n".join(lines[:shown])
        if found.more or shown < len(lines):
            body += (
                f"\n\n[Showing the first {shown} matches; there are more. Narrow the pattern, path or glob, "
                "or raise limit.]"
            )
        return ToolOutput(body, details={"matches": shown, "truncated": found.more or shown < len(lines)})


@dataclass
class _Found:
    """What the worker reported: matches, whether there were more, or why it was stopped or failed."""

    matches: list[tuple[str, int, str]] = field(default_factory=list)
    more: bool = False
    finished: bool = False
    stopped: str | None = None  # "cancelled" or "time"
    failure: str | None = None


def _run_worker(request: dict[str, Any], time_limit: float, cancel: CancelToken | None) -> _Found:
    """Run one search in a child process, killing it on cancel or after ``time_limit`` seconds."""
    found = _Found()
    # The kernel's CPU limit is a backstop in case this process dies and cannot kill the child.
    request = {**request, "cpu_seconds": math.ceil(time_limit) + 2}
    proc = subprocess.Popen(
        [sys.executable, "-m", _WORKER],
        cwd=_PACKAGE_HOME,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # all PIPE
    try:
        proc.stdin.write(json.dumps(request).encode("utf-8"))
        proc.stdin.close()
        found.stopped = _read_messages(proc.stdout.fileno(), found, time.monotonic() + time_limit, cancel)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        errors = proc.stderr.read().decode("utf-8", errors="replace").strip()
        proc.stderr.close()
    if found.stopped is None and not found.finished:
        last = errors.splitlines()[-1] if errors else f"the search process exited with code {proc.returncode}"
        found.failure = last
    return found


def _read_messages(fd: int, found: _Found, deadline: float, cancel: CancelToken | None) -> str | None:
    """Collect the worker's messages until it ends; ``"cancelled"``/``"time"`` if it must be stopped."""
    pending = b""
    while True:
        if cancel is not None and cancel.cancelled:
            return "cancelled"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "time"
        ready, _, _ = select.select([fd], [], [], min(_POLL_S, remaining))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        *complete, pending = (pending + chunk).split(b"\n")
        for line in complete:
            message = json.loads(line)
            if message[0] == "match":
                found.matches.append((message[1], message[2], message[3]))
            elif message[0] == "end":
                found.more = bool(message[1])
                found.finished = True


def _timed_out(lines: list[str], pattern: str, raw_path: str, time_limit: float) -> ToolOutput:
    notice = (
        f"[grep stopped after its {time_limit:g} s time limit while searching {raw_path} for {pattern!r}. "
        "Nested repeats such as (a+)+ can make a regex take for ever; simplify the pattern, narrow the "
        "path or glob, or set literal=true.]"
    )
    shown = lines[: head_count(lines)]
    if shown:
        notice = "\n".join(shown) + f"\n\n[Matches found before the stop: {len(shown)}.]\n" + notice
    return ToolOutput(notice, is_error=True, details={"matches": len(shown), "timedOut": True})
