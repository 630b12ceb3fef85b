"""``bash``: run a shell command in the working directory and report its output and exit code.

The command runs as ``bash -c`` in a session (process group) of its own, so a timeout or a cancel can
kill everything it started, background jobs included: SIGTERM to the group, then SIGKILL after a short
grace. stdout and stderr are merged in arrival order. Only the last ``MAX_LINES`` lines / ``MAX_BYTES``
bytes are returned, because the end of a long log is where the failure is. A non-zero exit, a timeout
or a cancel is an error result; the output is shown either way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema
from pi_compact.agent.tools.truncate import MAX_BYTES, MAX_LINES, format_size, tail_text

DEFAULT_TIMEOUT_S = 120.0
_POLL_S = 0.05
_KILL_GRACE_S = 2.0
# Enough raw bytes to fill the byte budget even when the cut lands inside a multi-byte character.
_TAIL_KEEP = 2 * MAX_BYTES


class BashTool:
    name = "bash"
    description = (
        "Run a shell command with bash in the working directory and return its combined stdout and "
        f"stderr plus the exit code. Only the last {MAX_LINES} lines / {MAX_BYTES // 1024} KB of output "
        "are returned. The command is killed when it exceeds `timeout`. There is no terminal or stdin, "
        "so avoid interactive programs."
    )
    parameters = object_schema(
        required=["command"],
        command=("string", "The bash command line to run."),
        timeout=("number", f"Seconds before the command is killed (default {DEFAULT_TIMEOUT_S:g})."),
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        command: str = args["command"]
        timeout: float = args.get("timeout") or DEFAULT_TIMEOUT_S
        if timeout <= 0:
            return error(f"timeout must be a positive number of seconds, got {timeout}.")
        if not ctx.cwd.is_dir():
            return error(f"The working directory {ctx.cwd} does not exist, so the command cannot run.")
        if ctx.cancelled:
            return error("Cancelled before the command started.")
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ctx.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None  # stdout=PIPE guarantees it
        capture = _TailCapture()
        reader = threading.Thread(target=capture.pump, args=(proc.stdout,), daemon=True)
        reader.start()
        stopped = _wait(proc, reader, timeout, ctx.cancel)
        if stopped is not None:
            _kill_group(proc)
        # A grandchild that left our process group may hold the pipe open forever; do not wait on it.
        reader.join(timeout=1.0)
        return _report(capture, proc.wait(), stopped, timeout)


class _TailCapture:
    """Drains a pipe, keeping only its last bytes plus running totals."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tail = bytearray()
        self.total_bytes = 0
        self.newlines = 0
        self.ends_with_newline = True

    def pump(self, stream: IO[bytes]) -> None:
        fd = stream.fileno()
        while chunk := os.read(fd, 65536):
            with self._lock:
                self._tail += chunk
                del self._tail[:-_TAIL_KEEP]
                self.total_bytes += len(chunk)
                self.newlines += chunk.count(b"\n")
                self.ends_with_newline = chunk.endswith(b"\n")
        stream.close()

    def snapshot(self) -> tuple[str, bool]:
        """The captured tail as text, and whether earlier bytes were already dropped."""
        with self._lock:
            return self._tail.decode("utf-8", errors="replace"), self.total_bytes > len(self._tail)

    @property
    def total_lines(self) -> int:
        return self.newlines + (0 if self.ends_with_newline else 1)


def _wait(
    proc: subprocess.Popen[bytes], reader: threading.Thread, timeout: float, cancel: threading.Event | None
) -> str | None:
    """Wait for the command and its output to finish; ``"timeout"``/``"cancelled"`` if stopped early."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None or reader.is_alive():
        if cancel is not None and cancel.is_set():
            return "cancelled"
        if time.monotonic() >= deadline:
            return "timeout"
        if proc.poll() is None:
            try:
                proc.wait(timeout=_POLL_S)
            except subprocess.TimeoutExpired:
                pass
        else:
            reader.join(timeout=_POLL_S)
    return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the command's whole process group, then SIGKILL whatever is left after a grace period."""
    # start_new_session=True made the shell a session leader, so its pid is also the group id.
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    # Background jobs may outlive the shell or ignore SIGTERM; SIGKILL cannot be ignored.
    _signal_group(proc.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _report(capture: _TailCapture, exit_code: int, stopped: str | None, timeout: float) -> ToolOutput:
    tail, dropped = capture.snapshot()
    tail = tail.removesuffix("\n")
    shown = tail_text(tail)
    notes: list[str] = []
    truncated = dropped or shown != tail
    if truncated:
        shown_lines = shown.count("\n") + 1
        notes.append(
            f"[Output truncated: showing the last {shown_lines} of {capture.total_lines} lines "
            f"({format_size(len(shown.encode('utf-8')))} of {format_size(capture.total_bytes)}).]"
        )
    if stopped == "timeout":
        notes.append(f"[Command timed out after {timeout:g} s; its process group was killed.]")
    elif stopped == "cancelled":
        notes.append("[Command cancelled; its process group was killed.]")
    notes.append(f"[Exit code: {_describe_exit(exit_code)}]")
    body = shown if shown else "(no output)"
    details: dict[str, Any] = {"exitCode": exit_code}
    if truncated:
        details["truncated"] = True
    if stopped is not None:
        details["killed"] = stopped
    text = body + "\n\n" + "\n".join(notes)
    return ToolOutput(text, is_error=exit_code != 0 or stopped is not None, details=details)


def _describe_exit(code: int) -> str:
    if code >= 0:
        return str(code)
    try:
        return f"{code} (killed by {signal.Signals(-code).name})"
    except ValueError:
        return str(code)
