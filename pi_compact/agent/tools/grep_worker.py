"""The search half of ``grep``, run as a child process (``python -m pi_compact.agent.tools.grep_worker``).

Python's ``re`` cannot be interrupted: a pattern such as ``(a+)+$`` can backtrack for hours inside one
``search`` call, holding the GIL, deaf to a cancel flag. So the search runs here, in a process the tool
can kill when the call is cancelled or its time limit passes.

Protocol: one JSON object on stdin (``pattern``, ``ignore_case``, ``root``, ``glob``, ``limit``,
``cpu_seconds``); one JSON array per line on stdout: ``["match", relative_path, line_number, text]`` for
each match (text already cut to ``MAX_MATCH_LINE_CHARS``), then ``["end", more]`` where ``more`` says
the search stopped at ``limit``. ``cpu_seconds`` caps the process's CPU time through the kernel, so it
dies by itself even if the tool that started it is gone.
"""

from __future__ import annotations

import json
import re
import resource
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from pi_compact.agent.tools.walk import compile_glob, is_binary, relative, walk

MAX_MATCH_LINE_CHARS = 500


def search(request: dict[str, Any], out: TextIO) -> None:
    """Write the protocol's messages for ``request`` to ``out`` (see the module docstring)."""
    flags = re.IGNORECASE if request["ignore_case"] else 0
    regex = re.compile(request["pattern"], flags)
    root = Path(request["root"])
    glob = request.get("glob")
    matcher = compile_glob(glob) if glob else None
    limit: int = request["limit"]
    found = 0
    for rel, path in _candidate_files(root):
        if matcher is not None and not matcher.match(rel):
            continue
        for line_no, line in _matching_lines(path, regex):
            if found == limit:
                _send(out, ["end", True])
                return
            found += 1
            _send(out, ["match", rel, line_no, _cut(line)])
    _send(out, ["end", False])


def _send(out: TextIO, message: list[Any]) -> None:
    # Flushed at once: if the search is killed later, the matches sent so far still reach the tool.
    out.write(json.dumps(message, ensure_ascii=False) + "\n")
    out.flush()


def _candidate_files(root: Path) -> Iterator[tuple[str, Path]]:
    """``(relative name, path)`` for each text file to search; a single file is named by itself."""
    if root.is_file():
        if not is_binary(root):
            yield root.name, root
        return
    for path, is_dir in walk(root):
        if not is_dir and path.is_file() and not is_binary(path):
            yield relative(path, root), path


def _matching_lines(path: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            for line_no, line in enumerate(handle, start=1):
                text = line.rstrip("\r\n")
                if regex.search(text):
                    yield line_no, text
    except OSError:
        return  # unreadable or vanished since the walk: one odd file never aborts the search


def _cut(line: str) -> str:
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return line
    return f"{line[:MAX_MATCH_LINE_CHARS]} [... {len(line) - MAX_MATCH_LINE_CHARS} more characters]"


def main() -> None:
    request = json.loads(sys.stdin.read())
    cpu_seconds = int(request["cpu_seconds"])
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    except (ValueError, OSError):
        pass  # a lower limit is already in force, which is just as good
    with open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=False) as out:
        search(request, out)


if __name__ == "__main__":
    main()
