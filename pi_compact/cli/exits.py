"""How a run ends: the one mapping from a failure to the process's exit code, and its one-line message.

0 done, 1 failed, 2 bad usage (a flag, a missing or unreadable session file), 3 ``compact`` wrote a
model-free summary, 130 cancelled (Ctrl-C), as shells count a SIGINT.
"""

from __future__ import annotations

import sys

from pi_compact.errors import Cancelled, SessionError, UsageError

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_FALLBACK = 3
EXIT_CANCELLED = 130


def exit_code_for(error: BaseException) -> int:
    """The exit code a run that ended with ``error`` returns."""
    if isinstance(error, (Cancelled, KeyboardInterrupt)):
        return EXIT_CANCELLED
    if isinstance(error, (UsageError, SessionError)):
        return EXIT_USAGE
    return EXIT_FAILED


def report(error: BaseException, *, cancelled: str | None = None) -> int:
    """Say why the run ends on stderr and return its exit code; ``cancelled`` words a cancel (else the
    error's own text, or "cancelled." for a bare Ctrl-C)."""
    code = exit_code_for(error)
    if code == EXIT_CANCELLED:
        text = cancelled or str(error) or "cancelled."
    else:
        text = str(error)
    sys.stderr.write(f"pi-compact: {text}\n")
    return code
