"""Values of pi's ``models.json`` that may be commands: an ``apiKey`` (and a header's value) as pi resolves them.

``config_value(value, what)`` is pi's rule: ``!command`` runs and its trimmed output is the value; else an
environment variable of that name, when set and not empty; else the text itself. ``run_key_command`` is the one
runner for every such command, and differs from pi on purpose in three ways:

- it runs in a fixed directory of the user's (``neutral_dir``: the agent directory, else home), never the
  project's: ``python3 -c "import keyring…"`` started in a cloned repository would import the repository's
  ``keyring.py`` with the user's environment, keys included (pi runs it in the current directory);
- it reads at most ``OUTPUT_LIMIT`` bytes of output (a key is short; pi reads up to 1 MiB into memory) and
  stops the command, with everything it started, past that or past ``TIMEOUT_S`` (pi's ten seconds);
- a failure is a ``ConfigError`` of one sentence that names the value, the command and why it failed (pi goes
  on without a key, and the provider's refusal is what the user reads).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from pi_compact.errors import ConfigError
from pi_compact.paths import agent_dir

TIMEOUT_S = 10.0  # pi gives a command ten seconds
OUTPUT_LIMIT = 64 * 1024  # bytes of output kept; a key or a header's value is far shorter
_STDERR_KEPT = 4096  # the end of what the command said on stderr, for the reason
_SHOWN_COMMAND = 80  # characters of the command quoted in an error
_READ_SIZE = 65536
_POLL_S = 0.05


def neutral_dir() -> Path:
    """Where value commands run: the agent directory (``~/.pi/agent``), else the home directory, else ``/``."""
    for candidate in (agent_dir(), Path.home()):
        try:
            if candidate.is_dir():
                return candidate
        except (OSError, RuntimeError):  # no home directory known
            continue
    return Path(os.sep)


def config_value(value: str, what: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` as pi resolves an ``apiKey`` or a header: ``!command``'s output, else the variable named
    ``value`` when it is set and not empty, else ``value``. ``what`` names the command in an error ("the
    apiKey command of provider lab in models.json")."""
    if value.startswith("!"):
        return run_key_command(value[1:], what)
    environ = os.environ if environ is None else environ
    return environ.get(value) or value


def run_key_command(command: str, what: str, *, timeout_s: float = TIMEOUT_S, limit: int = OUTPUT_LIMIT) -> str:
    """The trimmed standard output of ``command`` (run by the shell in ``neutral_dir()``, stdin closed).

    Raises ``ConfigError`` naming ``what`` and the command when it cannot start, runs past ``timeout_s``,
    prints more than ``limit`` bytes, exits with a status other than 0 or prints nothing.
    """
    try:
        process = subprocess.Popen(command, shell=True, cwd=neutral_dir(), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise _failed(what, command, f"could not start ({exc.strerror or exc})") from None
    assert process.stdout is not None and process.stderr is not None
    out = _Capture(process.stdout, limit, keep="head")
    err = _Capture(process.stderr, _STDERR_KEPT, keep="tail")
    deadline = time.monotonic() + timeout_s
    reason: str | None = None
    try:
        while not (out.done.is_set() and err.done.is_set() and process.poll() is not None):
            if out.over:
                reason = f"printed more than {limit // 1024} KiB, far more than a key"
                break
            if time.monotonic() > deadline:
                reason = f"ran for more than {timeout_s:g} s"
                break
            _wait_a_little(process, out, err)
    finally:
        if reason is not None or process.poll() is None:
            _stop(process)
        process.wait()
        out.join()
        err.join()
    if reason is not None:
        raise _failed(what, command, reason)
    said = _last_line(err.text())
    if process.returncode != 0:
        raise _failed(what, command, f"failed (exit {process.returncode}{': ' + said if said else ''})")
    value = out.text().strip()
    if not value:
        raise _failed(what, command, f"printed nothing{' (it said: ' + said + ')' if said else ''}")
    return value


class _Capture:
    """Reads one pipe in a thread until its end: the first (``head``) or last (``tail``) ``limit`` bytes are
    kept; reading stops once more than ``limit`` bytes of a ``head`` capture came (``over``)."""

    def __init__(self, pipe: IO[bytes], limit: int, *, keep: str) -> None:
        self._pipe = pipe
        self._limit = limit
        self._keep = keep
        self._parts: list[bytes] = []
        self._size = 0
        self.over = False
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="key-command-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = os.read(self._pipe.fileno(), _READ_SIZE)
                if not chunk:
                    return
                self._parts.append(chunk)
                self._size += len(chunk)
                if self._size > self._limit:
                    if self._keep == "head":
                        self.over = True
                        return
                    tail = b"".join(self._parts)[-self._limit:]
                    self._parts, self._size = [tail], len(tail)
        except OSError:  # the pipe closed under us: the command was stopped
            return
        finally:
            self.done.set()

    def join(self) -> None:
        self._thread.join(1.0)
        self._pipe.close()

    def text(self) -> str:
        return b"".join(self._parts).decode("utf-8", errors="replace")


def _wait_a_little(process: subprocess.Popen[bytes], out: _Capture, err: _Capture) -> None:
    """Block until something may have changed (the command ended, a pipe closed) or ``_POLL_S`` passed."""
    if process.poll() is None:
        try:
            process.wait(_POLL_S)
        except subprocess.TimeoutExpired:
            pass
    else:  # ended, but something it started may still hold a pipe open
        (out if not out.done.is_set() else err).done.wait(_POLL_S)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the command and whatever it started (its own session: ``start_new_session``)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
    except OSError:  # already gone
        pass


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _printable(lines[-1])[:200] if lines else ""


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _failed(what: str, command: str, reason: str) -> ConfigError:
    shown = _printable(command.strip())
    if len(shown) > _SHOWN_COMMAND:
        shown = shown[:_SHOWN_COMMAND] + "…"
    return ConfigError(f"{what[:1].upper()}{what[1:]} `{shown}` {reason}: fix the command or replace it with "
                       "the value itself.")


__all__ = ["OUTPUT_LIMIT", "TIMEOUT_S", "config_value", "neutral_dir", "run_key_command"]
