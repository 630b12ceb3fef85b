"""CancelToken: the one way a user's Ctrl-C or Esc reaches running work.

The UI thread calls ``cancel()``; a model stream, the summarizer, the tool loop and each tool poll
``cancelled`` (or ``wait`` on it) and stop at the next safe point. One-way: a token is never reset,
so work started after a cancel sees it too. Stdlib only, importable from any layer.
"""

from __future__ import annotations

import threading


class CancelToken:
    """A one-way cancel flag shared between the UI thread and running work (model calls, tools)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds; returns True (early) once cancelled."""
        return self._event.wait(timeout)


__all__ = ["CancelToken"]
