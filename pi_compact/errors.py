"""Every exception pi_compact raises on purpose, in one tree; ``str(exc)`` is one sentence a user can act on.

Only the CLI turns them into exit codes and text (``cli/exits.py``); nothing else prints them.
"""

from __future__ import annotations

import os

# Set (to anything but "" or "0"), the CLI re-raises these instead, traceback and all, for whoever is
# debugging (simonw/llm's ``LLM_RAISE_ERRORS``).
RAISE_ERRORS_VARIABLE = "PI_COMPACT_RAISE_ERRORS"


def raise_errors() -> bool:
    """Should the CLI re-raise errors instead of printing their one sentence? (A debugging switch.)"""
    return os.environ.get(RAISE_ERRORS_VARIABLE, "") not in ("", "0")


# The tree (what each is for):
# PiCompactError
# ├── ConfigError            invalid settings value or file
# │   └── LocalModelError    the embedded local model cannot run (extra missing, checksum mismatch)
# ├── SessionError           unreadable or unusable session file
# ├── UsageError             bad command-line input
# ├── ModelError             a model call failed (raised only by the llm adapters)
# │   ├── AuthError          missing or rejected API key
# │   ├── TransientModelError  rate limit, 5xx, connection trouble: worth retrying
# │   └── ContextOverflowError the request did not fit the model's context window
# ├── CompactionError        nothing to compact, already compacted, summary unusable
# └── Cancelled              the user cancelled (Ctrl-C / Esc / a cancel call)
class PiCompactError(Exception):
    """Base class: the message is a complete sentence for the user."""


class ConfigError(PiCompactError):
    """A settings file or value is invalid."""


class LocalModelError(ConfigError):
    """The embedded local model cannot run: its extra is not installed, or its bytes fail their check."""


class SessionError(PiCompactError):
    """A session file cannot be read or used."""


class UsageError(PiCompactError):
    """The command line asked for something impossible (missing file, negative number...)."""


class ModelError(PiCompactError):
    """A call to a language model failed."""


class AuthError(ModelError):
    """The provider has no usable API key."""


class TransientModelError(ModelError):
    """A failure that may go away when retried (rate limit, 5xx, connection)."""


class ContextOverflowError(ModelError):
    """The request was larger than the model's context window."""


class CompactionError(PiCompactError):
    """Compaction could not produce a result (nothing to compact, already compacted...)."""


class Cancelled(PiCompactError):
    """The user cancelled the running operation; nothing was written."""

    def __init__(self, message: str = "Cancelled.") -> None:
        super().__init__(message)
