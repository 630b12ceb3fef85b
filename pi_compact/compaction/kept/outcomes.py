"""``<tool-outcomes>``: what each edit, write and test run did, and why each failed call failed (pure).

A small summarizer reads a failed edit as done ("replaced return a - b with return a + 1", though that
edit never applied) and leaves out the edit that did apply and the run that passed. So the outcome of
every change and every test run is kept by construction, one line each, newest first, read from the
calls' results (``calls``), never from anyone's sentences:

- an edit or write: ``applied``/``written`` with the first line it replaced and put in and the names it
  added (``names``), or ``FAILED, nothing changed`` with the tool's error;
- a test run (``runner``: the command starts a runner and its output has a tally): ``passed`` or
  ``FAILED`` with the exit status, the tally word for word, the failed tests' names, the error line;
- any other failed call: ``FAILED`` with its exit status and the line chosen by ``errors``.

Successful reads, listings and other commands are left out: the file lists and the prose carry them.
Paths, commands, texts and errors are quoted data (``blocks.quote``); secrets in them are hidden by
shape. The newest lines that fit ``budget_tokens`` are kept, the previous summary's after the new ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pi_compact.compaction.kept.blocks import quote
from pi_compact.compaction.kept.calls import Call, finished_calls, program_output
from pi_compact.compaction.kept.errors import failure_excerpt
from pi_compact.compaction.kept.names import added_names, replacements
from pi_compact.compaction.kept.runner import is_test_command, run_report
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.llm.redact import redact_token_shapes
from pi_compact.messages import Message

CHANGE_TOOLS = frozenset({"edit", "write"})
SHOWN_CHARS = 80  # of a command, or of the first line an edit replaced or put in
NAMES_SHOWN = 5
FAILED_TESTS_SHOWN = 5


def _shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """The first non-empty line of ``text``, secrets hidden, cut at ``limit``, quoted; "…" when cut."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = redact_token_shapes(lines[0]) if lines else ""
    more = len(lines) > 1 or len(first) > limit
    return quote(first[:limit] + ("…" if more else ""))


def _target(call: Call) -> str:
    arguments = call.arguments
    for key in ("path", "command", "pattern", "query", "id"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return _shown(value, 120)
    return ""


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(quote(n) for n in names[:NAMES_SHOWN])
    more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return f"; adds {shown}{more}" if names else ""


def _change(call: Call) -> str:
    head = f"{call.tool} {_target(call)}"
    if not call.ok:
        error = failure_excerpt(call.tool, call.output)
        return f"{head}: FAILED, nothing changed" + (f": {quote(error)}" if error else "")
    pairs = replacements(call.tool, call.arguments)
    names = _names(added_names(call.tool, call.arguments))
    if call.tool == "write":
        lines = pairs[0][1].count("\n") + 1 if pairs and pairs[0][1] else 0
        return f"{head}: written ({lines} line{'' if lines == 1 else 's'}){names}"
    changes = "; ".join(f"{_shown(old)} -> {_shown(new)}" for old, new in pairs[:2])
    more = f" and {len(pairs) - 2} more replacements" if len(pairs) > 2 else ""
    return f"{head}: applied" + (f", {changes}{more}" if changes else "") + names


def _status(call: Call) -> str:
    if call.exit_code is not None and call.exit_code != 0:
        return f"FAILED (exit {call.exit_code})"
    return "FAILED"


def _command(call: Call) -> str | None:
    command = str(call.arguments.get("command") or "")
    who = "command run by the user" if call.by_user else "command"
    test = is_test_command(command)
    report = run_report(program_output(call.output)) if test else None
    if report is not None:
        failed = report.failed or not call.ok
        line = f"test run {_target(call)}: {_status(call) if failed else 'passed'}, {quote(report.tally)}"
        if report.names:
            shown = ", ".join(quote(name) for name in report.names[:FAILED_TESTS_SHOWN])
            extra = len(report.names) - FAILED_TESTS_SHOWN
            line += f"; failed tests: {shown}" + (f" and {extra} more" if extra > 0 else "")
        error = failure_excerpt("bash", call.output) if failed else None
        return line + (f"; error: {quote(error)}" if error and error != report.tally else "")
    if call.ok:
        return f"test run {_target(call)}: passed (exit 0)" if test else None
    error = failure_excerpt("bash", call.output)
    return f"{who} {_target(call)}: {_status(call)}" + (f": {quote(error)}" if error else "")


def outcome_line(call: Call) -> str | None:
    """The line ``call`` is kept as, or None when its outcome is not kept (a successful read...)."""
    if call.hidden:
        return None  # ``!!cmd``: the user kept it out of the model's context
    if call.tool in CHANGE_TOOLS:
        return _change(call)
    if call.tool == "bash":
        return _command(call)
    if call.ok:
        return None
    error = failure_excerpt(call.tool, call.output)
    return f"{call.tool} {_target(call)}: FAILED" + (f": {quote(error)}" if error else "")


def tool_outcomes(messages: Iterable[Message], previous: Sequence[str], budget_tokens: int) -> list[str]:
    """The outcome lines of ``messages`` newest first, then ``previous`` (the last summary's, newest
    first), each once, as many as fit ``budget_tokens``."""
    new = [line for line in map(outcome_line, finished_calls(messages)) if line is not None]
    kept: list[str] = []
    spent = 0
    for line in [*reversed(new), *previous]:
        cost = estimate_text_tokens(line) + 1
        if line in kept:
            continue
        if spent + cost > budget_tokens:
            break
        kept.append(line)
        spent += cost
    return kept


__all__ = ["outcome_line", "tool_outcomes"]
