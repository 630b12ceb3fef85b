"""The line that says why a tool call failed, chosen by what its output is (pure).

A command's output (the tools' own notes removed: ``calls.program_output``) is read in this order:

1. a Python traceback: its last line (the exception, ``KeyError: 'shard_weight'``), which is what the
   traceback ends with;
2. the first error line: ``SomeError: ...``/``SomeException: ...``, ``panic: ...`` (with the lines that
   continue it, up to two), a compiler's ``error``/``fatal`` at the line's start or after its location
   (``error[E0308]: ...``, ``app.ts(28,2): error TS2739: ...``), ``FAILED ...``, the system's own words
   (``grep: x: No such file or directory``), Rust's ``panicked at`` and RSpec's ``Failure/Error:``;
3. a test runner's tally line (``1 failed, 2 passed in 0.03s``);
4. the last line the program printed.

Any other tool's failure is the tool's own message: its first line. Nothing here is a marker of ours:
a command that printed nothing gives None (its exit status says the rest). Secrets are hidden by shape
(``redact_token_shapes``) before an excerpt is returned: an error line is the place a token leaks to.
"""

from __future__ import annotations

import re

from pi_compact.compaction.kept.calls import COMMAND_TOOLS, program_output
from pi_compact.compaction.kept.runner import run_report
from pi_compact.llm.redact import redact_token_shapes

EXCERPT_CHARS = 300  # of one error
_FOLLOWING = 2  # lines after the error line that may continue it (a Go panic's signal and position)
_ERROR_LINE = re.compile(
    r"\b[A-Za-z]\w*(?:Error|Exception)\b:\s*\S|\bpanic:\s*\S"
    r"|(?:^\s*|:\s*)(?:error|fatal)(?:\[\w+\]|\s+[A-Z]+\d+)?:\s*\S"
    r"|^\s*FAILED\b|^\s*ERROR\b"
    r"|:\s*(?:No such file or directory|Permission denied|command not found|No module named)\b"
    r"|\bpanicked at\b|\bcalled `(?:Option|Result)::\w+\(\)` on (?:a|an) `|^\s*Failure/Error:",
    re.IGNORECASE,
)
_PANIC_HEAD = re.compile(r"\bpanicked at \S+:\d+:\d+:$")  # Rust's newer panic line: the message follows
_PYTEST_MARK = re.compile(r"^E\s+")
_RULE_LINE = re.compile(r"^\s*[=_\-*#~]{3,}")  # a separator (``==== short test summary ====``) ends it
_TRACEBACK = "Traceback (most recent call last):"


def _cut(text: str) -> str:
    text = redact_token_shapes(" ".join(text.split()))
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _traceback_tail(lines: list[str]) -> str | None:
    """The exception line a Python traceback ends with (the last traceback's)."""
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return None
    for line in lines[starts[-1] + 1:]:
        if line and not line[0].isspace() and line.strip() != _TRACEBACK:
            return line.strip()  # the first unindented line after the frames
    return None


def _error_line(lines: list[str]) -> str | None:
    for index, line in enumerate(lines):
        if not _ERROR_LINE.search(line):
            continue
        taken = [_PYTEST_MARK.sub("", line.strip())]
        for following in lines[index + 1 : index + 1 + _FOLLOWING]:
            continues = len(taken) == 1 and _PANIC_HEAD.search(taken[0])
            if not following.strip() or _RULE_LINE.match(following) or following.lstrip().startswith("note: ") or (
                    _ERROR_LINE.search(following) and not continues):
                break
            taken.append(following.strip())
        return " ".join(taken)
    return None


def error_excerpt(output: str) -> str | None:
    """Why a failed command failed, from its ``output`` (see the module's contract), or None."""
    lines = program_output(output).splitlines()
    found = _traceback_tail(lines) or _error_line(lines)
    if found is None:
        report = run_report("\n".join(lines))
        found = report.tally if report is not None else next((line for line in reversed(lines) if line.strip()),
                                                             None)
    return _cut(found) if found else None


def failure_excerpt(tool: str, output: str) -> str | None:
    """Why a failed call of ``tool`` failed: a command's chosen line, another tool's first line."""
    if tool in COMMAND_TOOLS:
        return error_excerpt(output)
    first = next((line for line in output.splitlines() if line.strip()), None)
    return _cut(first) if first else None


__all__ = ["EXCERPT_CHARS", "error_excerpt", "failure_excerpt"]
