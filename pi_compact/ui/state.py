"""What the REPL's commands act on: the console, the renderer, the settings and the live session.

``ReplState`` is the one mutable value the terminal passes around: ``/new`` replaces its runtime,
``/settings reload`` its settings, ``/model`` its model name. ``Command`` is the seam every slash
command plugs into: a name, an argument hint, a one-line help and a handler ``(state, arg) -> Outcome``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console
from rich.text import Text

from pi_compact.cancel import CancelToken
from pi_compact.options import AppOptions
from pi_compact.settings.files import LoadedSettings
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.status import gather_status, status_text

if TYPE_CHECKING:
    from pi_compact.agent.session import AgentSession
    from pi_compact.app import Runtime

Outcome = Literal["continue", "quit"]
Runner = Callable[[Callable[[CancelToken], Any]], Any]


@dataclass
class ReplState:
    """What commands act on; ``runtime`` is replaced by ``/new``, ``loaded`` by ``/settings reload``."""

    console: Console
    renderer: TerminalRenderer
    options: AppOptions
    loaded: LoadedSettings
    runtime: Runtime
    run: Runner
    model_name: str  # the model's name before it has resolved (litellm may still be importing)

    @property
    def session(self) -> AgentSession:
        return self.runtime.session

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    def print_status(self) -> None:
        self.console.print(status_text(gather_status(self.session, self.model_name)))


@dataclass(frozen=True)
class Command:
    """One slash command: ``handler(state, arg)`` runs it (``arg`` is the stripped rest of the line)."""

    name: str
    args: str
    help: str
    handler: Callable[[ReplState, str], Outcome]


__all__ = ["Command", "Outcome", "ReplState", "Runner"]
