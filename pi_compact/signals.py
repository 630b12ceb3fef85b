"""Ctrl-C as a cancel signal: the first press cancels the running work, a second one interrupts.

Cancelling through a token (rather than letting KeyboardInterrupt unwind) lets a model stream close
cleanly, a bash tool kill its whole process group, and a compaction end with nothing written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pi_compact.cancel import CancelToken


@contextmanager
def cancel_on_sigint(token: CancelToken) -> Iterator[None]:
    """While active, SIGINT cancels ``token``; pressed again after that, it raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return

    def handler(signum: int, frame: Any) -> None:
        if token.cancelled:
            raise KeyboardInterrupt
        token.cancel()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
