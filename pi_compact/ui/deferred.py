"""Output that has to wait: events until the renderer exists, text until the prompt lets it print.

The REPL's loader thread builds the session (and its renderer) after the prompt is up, and model
warnings arrive while the user types. ``Relay`` holds the session's events until a renderer takes
them; ``AbovePrompt`` runs print jobs above a running prompt (prompt_toolkit's ``run_in_terminal``),
or keeps them for the moment before the next prompt. Both may be called from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prompt_toolkit.application import Application, run_in_terminal

if TYPE_CHECKING:
    from pi_compact.agent.events import SessionEvent


class Relay:
    """The session's emit: holds events until the renderer may print them, then forwards."""

    def __init__(self) -> None:
        self.target: Callable[[SessionEvent], None] | None = None
        self.held: list[SessionEvent] = []

    def __call__(self, event: SessionEvent) -> None:
        if self.target is None:
            self.held.append(event)
        else:
            self.target(event)


class AbovePrompt:
    """Print jobs for the space above the prompt; ``app`` is the prompt's application once it exists."""

    def __init__(self) -> None:
        self.app: Application[Any] | None = None
        self._lock = threading.Lock()
        self._jobs: list[Callable[[], None]] = []

    def post(self, job: Callable[[], None]) -> None:
        """Print ``job``'s output above the prompt now if it is up, else before the next one."""
        with self._lock:
            self._jobs.append(job)
        self.in_prompt(lambda app: run_in_terminal(self.flush))

    def flush(self) -> None:
        """Run the jobs waiting (on the calling thread)."""
        with self._lock:
            jobs, self._jobs = self._jobs, []
        for job in jobs:
            job()

    def in_prompt(self, action: Callable[[Application[Any]], object]) -> None:
        """Run ``action`` on the prompt's event loop if a prompt is up (from any thread)."""
        app = self.app
        if app is not None and app.is_running and app.loop is not None:
            try:
                app.loop.call_soon_threadsafe(lambda: action(app))
            except RuntimeError:
                pass  # the prompt just closed

    def routed(
        self, thread: threading.Thread | None, show: Callable[[SessionEvent], None]
    ) -> Callable[[SessionEvent], None]:
        """``show`` for events, except that those emitted on ``thread`` (the loader, warming the model up
        while the user types: the local model's "using the embedded model" notice) go above the prompt
        instead of into it. A turn's events are shown directly."""

        def route(event: SessionEvent) -> None:
            if threading.current_thread() is thread:
                self.post(lambda: show(event))
            else:
                show(event)

        return route

    def interrupt(self, exc: BaseException) -> None:
        """End a running prompt with ``exc`` (raised where the prompt was called)."""
        self.in_prompt(lambda app: app.exit(exception=exc))


__all__ = ["AbovePrompt", "Relay"]
