"""Each tool call of a history with its result, and whether it worked, read from structure (pure).

A call's outcome comes from its result message only: ``isError``, and for a command the exit status it
reports (``details.exitCode``; our bash tool's closing ``[Exit code: N]`` note; pi's ``Command exited
with code N``). A call without its result (cut off, or a branch summary's history) has no outcome and
counts as not known to have worked. A user's own shell run (``!cmd``, a ``bashExecution`` message) is a
call of the ``bash`` tool by the user, with its recorded exit code.

``program_output`` is a command's output without the notes our tool and pi's add to it (the exit code,
truncation, timeout): those are markers of ours, never an error line to quote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_compact.messages import Message, text_of

COMMAND_TOOLS = frozenset({"bash"})
_OUR_EXIT = re.compile(r"^\[Exit code: (-?\d+)[^\]]*\]$")
_PI_EXIT = re.compile(r"^Command exited with code (-?\d+)$")
# Notes the tools put after a command's output (ours in brackets; pi's as plain lines).
_TOOL_NOTE = re.compile(
    r"^\[(?:Exit code: |Output truncated|Command timed out|Command cancelled|Showing lines|Full output)"
    r"|^Command (?:exited with code -?\d+|aborted|timed out after [\d.]+ seconds)$"
)


@dataclass(frozen=True)
class Call:
    """One finished tool call: the tool, its arguments, its result's text, whether it worked, the exit
    status a command reported (None: not reported), and whether the user ran it (``!cmd``)."""

    tool: str
    arguments: Mapping[str, Any] = field(hash=False)
    output: str
    ok: bool
    exit_code: int | None = None
    by_user: bool = False
    hidden: bool = False  # a ``!!cmd`` run: the user kept it out of the model's context


def exit_code(result: Message) -> int | None:
    """The exit status a command's result reports, or None."""
    details = result.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("exitCode"), int):
        return int(details["exitCode"])
    for line in reversed(text_of(result.get("content")).splitlines()[-4:]):
        match = _OUR_EXIT.match(line.strip()) or _PI_EXIT.match(line.strip())
        if match:
            return int(match.group(1))
    return None


def program_output(output: str) -> str:
    """``output`` without the tools' own notes (see the module's contract)."""
    return "\n".join(line for line in output.splitlines() if not _TOOL_NOTE.match(line.strip())).strip()


def finished_calls(messages: Iterable[Message]) -> Iterator[Call]:
    """Each call of ``messages`` that has its result (and each ``!cmd`` run), in the order of the results."""
    pending: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            for block in message.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    arguments = block.get("arguments")
                    pending[str(block.get("id"))] = (
                        str(block.get("name") or ""), arguments if isinstance(arguments, Mapping) else {})
        elif role == "toolResult":
            call = pending.pop(str(message.get("toolCallId")), None)
            if call is None:
                continue
            tool, arguments = call
            code = exit_code(message) if tool in COMMAND_TOOLS else None
            ok = not message.get("isError") and code in (None, 0)
            yield Call(tool, arguments, text_of(message.get("content")), ok, code)
        elif role == "bashExecution":
            code = message.get("exitCode")
            code = code if isinstance(code, int) else None
            ok = code == 0 and not message.get("cancelled")
            yield Call("bash", {"command": str(message.get("command") or "")}, str(message.get("output") or ""),
                       ok, code, by_user=True, hidden=bool(message.get("excludeFromContext")))


__all__ = ["COMMAND_TOOLS", "Call", "exit_code", "finished_calls", "program_output"]
