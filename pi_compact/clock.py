"""The wall clock in the one unit session files and messages use: milliseconds since the epoch.

Every timestamp the package writes comes from ``now_ms`` (or from a ``now_ms`` callable passed in, so
tests can fix time). Durations shown to the user use ``time.monotonic`` instead, where they are measured.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    """Milliseconds since the Unix epoch, as pi's ``Date.now()``."""
    return int(time.time() * 1000)


__all__ = ["now_ms"]
