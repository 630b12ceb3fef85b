"""What the REPL's commands act on: the console, the renderer, the settings and the live session.

``ReplState`` is the one mutable value the terminal passes around: ``/new`` replaces its session,
``/settings reload`` its settings, ``/model`` its model name. ``Command`` is the seam every slash
command plugs into: a name, an argument hint, a one-line help and a handler ``(state, arg) -> Outcome``.
``Runtimes`` is what the terminal asks of the composition root (``cli.wiring.AppRuntimes``, handed over
by the CLI): the UI never builds sessions or models itself, so it imports neither ``cli`` nor litellm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from rich.console import Console
from rich.text import Text

from pi_compact.cancel import CancelToken
from pi_compact.options import AppOptions
from pi_compact.settings.files import LoadedSettings
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.status import gather_status, status_text

if TYPE_CHECKING:
    from pathlib import Path

    from pi_compact.agent.events import SessionEvent
    from pi_compact.agent.session import AgentSession
    from pi_compact.llm.protocol import ChatModel, ModelInfo
    from pi_compact.session.store import SessionStore
    from pi_compact.settings import Settings

Outcome = Literal["continue", "quit"]
Runner = Callable[[Callable[[CancelToken], Any]], Any]


class Runtimes(Protocol):
    """Sessions and models for this run, as the composition root wires them."""

    @property
    def options(self) -> AppOptions: ...

    def model_name(self, settings: Settings) -> str:
        """The model the run starts with, before it resolves; raises ``PiCompactError`` when none is set."""
        ...

    def start_notice(self, settings: Settings) -> str | None:
        """What to say about the model before the first prompt (the embedded model chosen by default), once."""
        ...

    def build(
        self, settings: Settings, emit: Callable[[SessionEvent], None], *, model: ChatModel | None = None,
        fresh: bool = False, path: Path | None = None, store: SessionStore | None = None,
    ) -> AgentSession:
        """A wired session (``fresh``: in a new session file, as ``/new`` wants, whatever the flags said;
        ``path``: that session file, as ``/resume`` wants, and ``/fork`` and ``/clone`` after writing it;
        ``store``: that session, not written yet, as ``/fork`` and ``/clone`` of a branch without an answer)."""
        ...

    def make_model(self, name: str, settings: Settings) -> ChatModel:
        """Resolve and build model ``name`` now."""
        ...

    def refuse_a_held_session(self, settings: Settings) -> None:
        """Raise ``SessionError`` when the session the run would open is another writer's."""
        ...

    def warm_up(self, model: ChatModel) -> ModelInfo | None:
        """Load the model library and resolve ``model`` if it is still lazy; its info when that happened now."""
        ...


@dataclass
class ReplState:
    """What commands act on; ``session`` is replaced by ``/new``, ``loaded`` by ``/settings reload``."""

    console: Console
    renderer: TerminalRenderer
    runtimes: Runtimes
    loaded: LoadedSettings
    session: AgentSession
    run: Runner
    model_name: str  # the model's name before it has resolved (litellm may still be importing)

    def __post_init__(self) -> None:
        # The spinners read the session's model as it is then (``/model`` and ``/new`` replace it).
        self.renderer.model_progress = lambda: self.session.model.progress

    @property
    def options(self) -> AppOptions:
        return self.runtimes.options

    def say(self, text: str, style: str = "", *, path: bool = False) -> None:
        """Print ``text``; ``path``: it holds a file path, so it is one logical line the terminal wraps
        (rich would break a long path mid-name with a newline, and a copied path would not work)."""
        self.console.print(Text(text, style=style), soft_wrap=path)

    def print_status(self) -> None:
        # One line at any width (rich 15 wraps a Text whatever its own no_wrap says): the end is cut with "…".
        self.console.print(status_text(gather_status(self.session, self.model_name)), no_wrap=True, overflow="ellipsis")


@dataclass(frozen=True)
class Command:
    """One slash command: ``handler(state, arg)`` runs it (``arg`` is the stripped rest of the line)."""

    name: str
    args: str
    help: str
    handler: Callable[[ReplState, str], Outcome]


__all__ = ["Command", "Outcome", "ReplState", "Runner", "Runtimes"]
