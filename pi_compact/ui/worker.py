"""Running a turn, a ``/compact`` or a ``/model`` switch in a worker thread while the keyboard stays live.

The main thread waits on an event and turns Ctrl-C (SIGINT) into a cancel of the work's
``CancelToken``; ``TurnKeys`` does the same for Esc and keeps what else is typed meanwhile. The work
sees the token and stops promptly, leaving the session file consistent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_compact.cancel import CancelToken
from pi_compact.ui.input import TurnKeys


@dataclass(frozen=True)
class Finished:
    """How the work ended (its value or exception, whether it was cancelled) and what was typed meanwhile."""

    value: Any
    error: BaseException | None
    cancelled: bool
    lines: list[str]  # lines ended with Enter, in order
    typed: str  # the unfinished line


def run_in_worker(
    work: Callable[[CancelToken], Any], pending: bytes = b"", tap: Callable[[bytes], bool] | None = None,
    typed: str = "", watching: Callable[[TurnKeys], None] | None = None,
) -> Finished:
    """Run ``work(token)`` in a worker thread; Ctrl-C or Esc cancels the token. ``pending``: keys read ahead;
    ``tap``: takes the keys a question asked by the work is waiting for; ``typed``: an unfinished line to
    continue (see ``TurnKeys``); ``watching(keys)`` is told the keys once they are watched (the toolbar shows them)."""
    token = CancelToken()
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = work(token)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread as is
            outcome["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=target, name="pi-turn", daemon=True)
    with TurnKeys(token.cancel, pending=pending, tap=tap, typed=typed) as keys:
        if watching is not None:
            watching(keys)
        worker.start()
        # Wait on an Event, not Thread.join: on Python < 3.13 a KeyboardInterrupt inside join() can
        # mark a still-running thread as finished.
        while not done.is_set():
            try:
                done.wait(0.05)
            except KeyboardInterrupt:
                token.cancel()  # the worker notices within ~0.1 s and ends the turn as aborted
    return Finished(outcome.get("value"), outcome.get("error"), token.cancelled, list(keys.lines), keys.typed)


__all__ = ["Finished", "run_in_worker"]
