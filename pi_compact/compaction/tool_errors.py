"""The error messages of failed tool calls in the history, and putting back the ones a summary left out (pure).

The summary prompt asks for error messages word for word, and a small summarizer still paraphrases them
("the tests failed") or leaves them out, though an exact error is what the next model needs to
recognise the failure again or to say what was fixed. A failed command (``bash``, ``isError``) holds its
error in a line such as ``KeyError: 'shard_weight'``, ``panic: runtime error: ...``, ``error[E0308]:
...`` or ``python: No module named pytest``; only those marked lines are taken: a failed command whose
output names no error adds nothing rather than a guess. Any other failed tool's result is the tool's
own error message (an edit's ``oldText not found in app.py ...``): its first line is the error. The
newest few, with the lines that continue them, are appended under "Critical Context" word for word
when the summary does not already quote them; a failed edit or write is said to be not applied, since a
summary that calls it done sends the next model after a fix that is not there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pi_compact.compaction.prompts import CRITICAL
from pi_compact.compaction.quality import append_items, normalise
from pi_compact.messages import Message, text_of

COMMAND_TOOLS = frozenset({"bash"})  # their result is a program's output, not the tool's own message
CHANGE_TOOLS = frozenset({"edit", "write"})  # a failure of these changed nothing
NOT_APPLIED = " (failed, not applied)"
ERRORS_ADDED = 3  # the newest distinct errors, at most
_EXCERPT = 300  # characters of one error
_FOLLOWING = 2  # lines after the error line that may continue it (a Go panic's signal and position)
# An error line: ``SomeError: ...``/``SomeException: ...`` anywhere (pytest's ``E   KeyError: ...``,
# Node's ``TypeError: ...``, Java's ``java.lang.IllegalStateException: ...``), ``panic: ...``, a
# compiler's ``error``/``fatal`` at the line's start or after its location (``error: ...``,
# ``error[E0308]: ...``, ``app.ts(28,2): error TS2739: ...``, ``main.c:3:1: error: ...``), or the
# system's own words (``grep: x: No such file or directory``).
_ERROR_LINE = re.compile(
    r"\b[A-Za-z]\w*(?:Error|Exception)\b:\s*\S|\bpanic:\s*\S"
    r"|(?:^\s*|:\s*)(?:error|fatal)(?:\[\w+\]|\s+[A-Z]+\d+)?:\s*\S"
    r"|:\s*(?:No such file or directory|Permission denied|command not found|No module named)\b"
    # Rust's panics (``thread 'main' panicked at src/x.rs:3:5:`` and the standard unwrap messages, which a
    # test harness prints alone under ``---- name stdout ----``) and RSpec's failed expectation.
    r"|\bpanicked at\b|\bcalled `(?:Option|Result)::\w+\(\)` on (?:a|an) `|^\s*Failure/Error:",
    re.IGNORECASE,
)
# Rust's newer panic line ends at the location; its message is the next line, whatever it says.
_PANIC_HEAD = re.compile(r"\bpanicked at \S+:\d+:\d+:$")
_PYTEST_MARK = re.compile(r"^E\s+")  # pytest's marker in front of an error line
_RULE_LINE = re.compile(r"^\s*[=_\-*#~]{3,}")  # a separator (``==== short test summary ====``) ends it


def error_excerpt(output: str) -> str | None:
    """The first error line of a failed tool's ``output`` with up to two lines continuing it, on one line."""
    lines = output.splitlines()
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
        excerpt = " ".join(taken)
        return excerpt if len(excerpt) <= _EXCERPT else excerpt[: _EXCERPT - 1] + "…"
    return None


def _own_message(output: str) -> str | None:
    """The first line of a tool's own error message (cut like an excerpt), or None when it is empty."""
    line = next((line.strip() for line in output.splitlines() if line.strip()), None)
    if line is None:
        return None
    return line if len(line) <= _EXCERPT else line[: _EXCERPT - 1] + "…"


def tool_errors(messages: Sequence[Message], limit: int = ERRORS_ADDED) -> list[tuple[str, str]]:
    """(tool name, error excerpt) of the newest ``limit`` failed tool results with a distinct error."""
    found: list[tuple[str, str]] = []
    for message in messages:
        if message.get("role") != "toolResult" or not message.get("isError"):
            continue
        output = text_of(message.get("content"))
        excerpt = error_excerpt(output)
        if excerpt is None and message.get("toolName") not in COMMAND_TOOLS:
            excerpt = _own_message(output)
        if excerpt is None:
            continue
        found = [item for item in found if item[1] != excerpt]
        found.append((str(message.get("toolName") or "tool"), excerpt))
    return found[-limit:]


def add_missing_errors(summary: str, errors: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """``summary`` with each error it does not quote appended under Critical Context, and those errors.

    Quoted means the error line's start (up to its first 80 characters, without case and punctuation)
    is in the summary: a summary that quotes the error but not the lines continuing it keeps its own."""
    text = normalise(summary)
    missing = [(tool, excerpt) for tool, excerpt in errors if normalise(excerpt[:80]) not in text]
    if not missing:
        return summary, []
    lines = [f"- Error from {tool}{NOT_APPLIED if tool in CHANGE_TOOLS else ''}: {excerpt}"
             for tool, excerpt in missing]
    return append_items(summary, {CRITICAL: lines}), [excerpt for _, excerpt in missing]


__all__ = ["add_missing_errors", "error_excerpt", "tool_errors"]
