"""``bash``: run a shell command in the working directory and report its output and exit code.

The call ends when the shell exits, with the output written up to then: a background job that still
holds the output pipe (``server &``, ``nohup server &``) does not hold the call, and is left running
(its later output is drained and dropped). A timeout or a cancel kills everything the call started:
the command runs as ``bash -c`` in a session (process group) of its own, and the kill reaches that
group plus, through ``proctree``, processes that left it with ``setsid`` or lost their parent. SIGTERM
first, then SIGKILL after a short grace. stdout and stderr are merged in arrival order. Only the last
``MAX_LINES`` lines / ``MAX_BYTES`` bytes are returned, because the end of a long log is where the
failure is. A non-zero exit, a timeout or a cancel is an error result; the output is shown either way.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import termios
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema
from pi_compact.agent.tools.proctree import call_processes, new_marker
from pi_compact.agent.tools.truncate import MAX_BYTES, MAX_LINES, format_size, tail_text
from pi_compact.cancel import CancelToken

DEFAULT_TIMEOUT_S = 120.0
_POLL_S = 0.05
_KILL_GRACE_S = 2.0
# After the shell exits, how long to wait for the output it wrote to be read from the pipe.
_SETTLE_S = 2.0
_KILL_ROUNDS = 3
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
        marker = new_marker()
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ctx.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, marker: "1"},
        )
        assert proc.stdout is not None  # stdout=PIPE guarantees it
        capture = _TailCapture()
        # A daemon thread: a background job may keep the pipe open long after the call has returned.
        reader = threading.Thread(target=capture.pump, args=(proc.stdout,), daemon=True)
        reader.start()
        stopped = _wait(proc, timeout, ctx.cancel)
        if stopped is not None:
            _kill_call(proc, marker)
        capture.settle(_SETTLE_S)
        return _report(capture, proc.wait(), stopped, timeout)


class _TailCapture:
    """Drains a pipe, keeping only its last bytes plus running totals."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tail = bytearray()
        self._fd = -1
        self._ended = threading.Event()
        self.total_bytes = 0
        self.newlines = 0
        self.ends_with_newline = True

    def pump(self, stream: IO[bytes]) -> None:
        self._fd = fd = stream.fileno()
        poller = select.poll()  # not select.select, which fails for descriptors past FD_SETSIZE
        poller.register(fd, select.POLLIN)
        try:
            while True:
                poller.poll()
                # Read and record under one lock, so ``settle`` never sees bytes that left the pipe
                # but are not in the tail yet.
                with self._lock:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        return
                    self._tail += chunk
                    del self._tail[:-_TAIL_KEEP]
                    self.total_bytes += len(chunk)
                    self.newlines += chunk.count(b"\n")
                    self.ends_with_newline = chunk.endswith(b"\n")
        finally:
            self._ended.set()
            stream.close()

    def settle(self, timeout: float) -> None:
        """Wait until everything written to the pipe so far has been recorded (or ``timeout`` passes).

        Called after the shell exited: whatever it wrote is in the pipe or the tail by then, while a
        background job may keep writing, or keep the pipe open, indefinitely.
        """
        deadline = time.monotonic() + timeout
        while not self._ended.is_set() and time.monotonic() < deadline:
            with self._lock:
                if self._fd >= 0 and _unread_bytes(self._fd) == 0:
                    return
            self._ended.wait(0.01)

    def snapshot(self) -> tuple[str, bool]:
        """The captured tail as text, and whether earlier bytes were already dropped."""
        with self._lock:
            return self._tail.decode("utf-8", errors="replace"), self.total_bytes > len(self._tail)

    @property
    def total_lines(self) -> int:
        return self.newlines + (0 if self.ends_with_newline else 1)


def _unread_bytes(fd: int) -> int:
    """Bytes waiting in the pipe ``fd``; -1 if that cannot be asked (so the caller keeps waiting)."""
    try:
        return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), "little", signed=True)
    except OSError:
        return -1


def _wait(proc: subprocess.Popen[bytes], timeout: float, cancel: CancelToken | None) -> str | None:
    """Wait for the shell to exit; ``"timeout"``/``"cancelled"`` if it has to be stopped first."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if cancel is not None and cancel.cancelled:
            return "cancelled"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        try:
            proc.wait(timeout=min(_POLL_S, remaining))
        except subprocess.TimeoutExpired:
            pass
    return None


def _kill_call(proc: subprocess.Popen[bytes], marker: str) -> None:
    """SIGTERM everything the call started, then SIGKILL whatever is left after a grace period."""
    # start_new_session=True made the shell a session leader, so its pid is also the group id.
    _signal_all(proc.pid, call_processes(proc.pid, marker), signal.SIGTERM)
    try:
        proc.wait(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    # Background jobs may outlive the shell or ignore SIGTERM; SIGKILL cannot be ignored. A few rounds,
    # as a process can fork between one look at /proc and the kill.
    for _ in range(_KILL_ROUNDS):
        left = call_processes(proc.pid, marker)
        _signal_all(proc.pid, left, signal.SIGKILL)
        if not left:
            break
        time.sleep(0.01)


def _signal_all(pgid: int, pids: set[int], sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


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
