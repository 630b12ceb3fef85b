"""The interactive terminal: ``pi-compact`` without ``-p``.

The prompt comes first (the agent and litellm load behind it); turns and commands run in a worker
thread that Esc or Ctrl-C cancels; Ctrl-D, ``/quit`` or a second Ctrl-C at an empty prompt exits 0.
"""

from __future__ import annotations

import shutil
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import print_formatted_text
from prompt_toolkit.completion import merge_completers
from prompt_toolkit.formatted_text import FormattedText

from pi_compact import __version__
from pi_compact.cancel import CancelToken
from pi_compact.errors import ConfigError, PiCompactError, raise_errors
from pi_compact.paths import history_file
from pi_compact.settings.files import LoadedSettings
from pi_compact.ui.command_table import NAMES, ROWS
from pi_compact.ui.deferred import AbovePrompt, Relay
from pi_compact.ui.input import SlashCompleter, make_prompt, open_history, quiet_terminal, take_typeahead
from pi_compact.ui.mentions import MentionCompleter
from pi_compact.ui.worker import run_in_worker

if TYPE_CHECKING:
    from pi_compact.ui.state import ReplState, Runtimes

COMMAND_NAMES = NAMES  # completion works before the session (and ui.commands) has loaded
KEYS_LINE = "/help · Enter send · Alt-Enter or Ctrl-J new line · Esc or Ctrl-C cancel · Ctrl-D quit"
MODEL_UNUSABLE = "Nothing was sent: the model cannot be used (see above); pick another with /model NAME."
WINDOW_UNKNOWN = ("Nothing was sent: no context window is known for this model (see above); start again with "
                  "--context-window N, or set its contextWindow in the settings.")


def _plain(text: str, style: str = "") -> None:
    """Print before rich is loaded (prompt_toolkit's printer is already imported), wrapped at words."""
    print_formatted_text(FormattedText([(style, word_wrapped(text, shutil.get_terminal_size().columns))]))


def word_wrapped(text: str, width: int) -> str:
    """``text`` with each line broken at spaces to fit ``width`` columns (the terminal would break words);
    a word longer than a line (a path) stays whole."""
    if width < 20:
        return text
    return "\n".join(textwrap.fill(line, width - 1, break_long_words=False, break_on_hyphens=False) or line
                     for line in text.splitlines())


class Repl:
    """The read-eval-print loop; ``state`` exists once the loader thread has built the session."""

    def __init__(self, runtimes: Runtimes, loaded: LoadedSettings, first_message: str | None = None) -> None:
        self.runtimes = runtimes
        self.loaded = loaded
        self.state: ReplState | None = None
        self.ready = threading.Event()
        self.warmed = threading.Event()  # the loader has tried to load the model library and the model
        self.failure: BaseException | None = None
        self._lock = threading.Lock()
        self._above = AbovePrompt()  # output waiting to be printed above the prompt
        self._loader: threading.Thread | None = None
        self._typeahead = ""
        # Lines typed ahead (with Enter) during a turn, submitted in order; a prompt from the command line is the first.
        self._queued: list[str] = [first_message] if first_message else []
        self._tap: Callable[[bytes], bool] | None = None  # keys for an approval question asked during a turn
        self._model_errors: set[str] = set()  # why the model cannot be used, as already shown: said once
        try:
            self.model_name = runtimes.model_name(loaded.settings)
            self._model_error: str | None = None
        except PiCompactError as exc:
            self.model_name, self._model_error = "(no model)", str(exc)
            self._model_errors.add(str(exc))

    # ---- background loading --------------------------------------------------------------------

    def start_loader(self, *_sender: object) -> None:
        """Hooked to every render of the prompt; starts the loader once."""
        if self._loader is None:
            self._loader = threading.Thread(target=self._load, name="pi-loader", daemon=True)
            self._loader.start()

    # After the prompt's first render: rich and the agent, the session file, then litellm (~5 s) and the model.
    # Input waits for it (Esc or Ctrl-C cancels before anything is sent); what it has to say goes above the
    # prompt; a session file that cannot be opened ends the program with that error.
    def _load(self) -> None:
        relay = Relay()
        try:
            from rich.console import Console

            from pi_compact.ui.renderer import TerminalRenderer
            from pi_compact.ui.state import ReplState

            console = Console(highlight=False)
            renderer = TerminalRenderer(console, show_thinking=self.loaded.settings.show_thinking)
            session = self.runtimes.build(self.loaded.settings, relay)
            from pi_compact.ui.approval_prompt import install

            self._tap = install(session, self.runtimes.options.approve or self.loaded.settings.approve, console,
                                renderer, self.runtimes.options.cwd)
            self.state = ReplState(console, renderer, self.runtimes, self.loaded, session, self.run_cancellable,
                                   self.model_name)
        except BaseException as exc:  # noqa: BLE001 - reported on the main thread, as before a prompt
            self.failure = exc
            self.ready.set()
            self._above.interrupt(exc)
            return
        self._above.post(lambda: self._session_banner(relay))  # queued first, so input waiting for us sees it
        self.ready.set()
        self._warm_model()

    def _session_banner(self, relay: Relay) -> None:
        state = self._require()
        for event in relay.held:
            state.renderer(event)
        relay.target = self._above.routed(self._loader, state.renderer)
        from pi_compact.ui.transcript import show_opening

        show_opening(state)

    def _warm_model(self) -> None:
        """Import litellm and resolve the model now, so the first request does not wait for them."""
        state = self._require()
        try:
            info = self.runtimes.warm_up(state.session.model)
            if info is not None:
                # As the session fits the settings to the window (and what every request carries); name
                # each value a user set.
                for warning in state.session.window_plan(self.loaded.sources).warnings:
                    self._post_say(f"warning: {warning}", "yellow")
        except PiCompactError as exc:
            if self._first_model_error(str(exc)):
                self._post_say(str(exc), "red")
        except Exception as exc:  # noqa: BLE001 - a background failure must not kill the prompt
            self._post_say(f"Loading the model failed: {exc}", "red")
        finally:
            self.warmed.set()

    def _first_model_error(self, text: str) -> bool:
        """Remember a model error; False when it was already shown (the banner, the loader or a send)."""
        with self._lock:
            seen = text in self._model_errors
            self._model_errors.add(text)
        return not seen

    def _post_say(self, text: str, style: str) -> None:
        state = self._require()
        self._above.post(lambda: state.say(text, style))

    def _require(self) -> ReplState:
        assert self.state is not None, "the loader has not finished"
        return self.state

    def _wait_ready(self) -> ReplState:
        if not self.ready.wait(0.3):
            _plain("Loading the session…", "ansibrightblack")
            self.ready.wait()
        if self.failure is not None:
            raise self.failure
        return self._require()

    # ---- running work ----------------------------------------------------------------------------

    # Turns, /compact and /model run in a worker while ``ui.toolbar`` shows the meter and the type-ahead; a
    # cancel leaves the session file consistent (a cancelled compaction writes nothing).
    def run_cancellable(self, work: Callable[[CancelToken], Any]) -> Any:
        """Run ``work`` in a worker thread (``ui.worker``); Ctrl-C or Esc cancels it. Its exception is re-raised."""
        from pi_compact.ui.toolbar import show_toolbar

        app, state = self._above.app, self._require()
        toolbar = show_toolbar(state, lambda: list(self._queued), self._typeahead)
        finished = run_in_worker(work, take_typeahead(app.input) if app is not None else b"", self._tap,
                                 self._typeahead, toolbar.watch)
        state.renderer.set_footer(None)
        if finished.cancelled:  # after a cancel nothing runs by itself: what was typed waits in the prompt
            self._typeahead = "\n".join([*finished.lines, finished.typed]).strip("\n")
        else:
            self._queued.extend(finished.lines)
            self._typeahead = finished.typed
        if finished.error is not None:
            raise finished.error
        return finished.value

    def send(self, state: ReplState, text: str) -> None:
        from pi_compact.ui.status import loading_label, model_ready, wait_ready

        session = state.session
        if not model_ready(session.model) or session.model.progress:
            state.renderer.working(loading_label(session.model))

        def work(token: CancelToken) -> Any:  # a cancel while the model loads ends the wait: nothing is sent
            while not (self.warmed.wait(0.05) or token.cancelled):
                pass
            # The local model starts in the background: wait for it too, cancellably, under its spinner.
            if token.cancelled or not wait_ready(session.model, token):
                return None
            return session.prompt(text, token)

        try:
            if self.run_cancellable(work) is None:  # cancelled before the message was sent or written
                self._typeahead = "\n".join(part for part in (text, self._typeahead) if part)
                state.say("Not sent; the message is back in the editor.", "yellow")
        except Exception as exc:  # noqa: BLE001 - a bug must not lose the session; the file is intact
            state.renderer.close()
            if raise_errors():
                raise
            if not isinstance(exc, PiCompactError):
                state.say(f"Internal error ({type(exc).__name__}): {exc}", "red")
            else:
                repeated = isinstance(exc, ConfigError) and not self._first_model_error(str(exc))
                unusable = WINDOW_UNKNOWN if "context window" in str(exc) else MODEL_UNUSABLE
                state.say(unusable if repeated else str(exc), "red")
        state.print_status()

    def _expand(self) -> None:
        """Ctrl-O at the prompt: the last collapsed tool output in full."""
        if self.state is None or not self.state.renderer.expand_last():
            _plain("No collapsed tool output to expand yet.", "ansibrightblack")

    def _cycle_thinking(self) -> None:
        """Shift+Tab at the prompt: the next thinking level (one entry in the session file)."""
        if self.state is None:
            _plain("The session is still loading.", "ansibrightblack")
            return
        from pi_compact.ui.commands.thinking import cycle

        _plain(cycle(self.state), "ansibrightblack")

    # ---- the loop --------------------------------------------------------------------------------

    def _commands(self) -> list[tuple[str, str]]:
        return [(row.name, row.help) for row in ROWS]

    def _arguments(self, command: str) -> list[str]:
        if self.state is None:
            return []
        from pi_compact.ui.commands import argument_options

        return list(argument_options(self.state, command))

    def _handle(self, text: str) -> bool:
        """Run one input; False when the REPL should end."""
        from pi_compact.ui.commands import dispatch, is_command

        state = self._wait_ready()
        self._above.flush()
        if is_command(text):
            return dispatch(state, text) != "quit"
        from pi_compact.ui.shell_escape import run_shell, shell_command

        shell = shell_command(text)
        if shell is not None:  # `!cmd` / `!!cmd`: the user's own shell command, not a message
            run_shell(state, *shell)
            return True
        from pi_compact.ui.mentions import attach_and_say

        self.send(state, attach_and_say(text, state.options.cwd, state.say))
        return True

    def loop(self) -> int:
        with quiet_terminal():
            try:
                return self._loop()
            except KeyboardInterrupt:  # only in the instant between two prompts; the session file is complete
                return 130
            finally:
                if self.state is not None:  # ends a background summary; the session file stays as it is
                    self.state.session.close()

    def _loop(self) -> int:
        _plain(f"pi-compact {__version__} · {self.model_name}", "bold")
        _plain(KEYS_LINE, "ansibrightblack")
        if notice := self._model_error or self.runtimes.start_notice(self.loaded.settings):  # before the prompt
            _plain(notice, "ansired" if self._model_error else "ansibrightblack")
        completer = merge_completers([SlashCompleter(self._commands, self._arguments), MentionCompleter(Path.cwd())])
        prompt = make_prompt(open_history(history_file()), completer, on_expand=self._expand,
                             on_cycle_thinking=self._cycle_thinking)
        self._above.app = prompt.app
        prompt.app.after_render += self.start_loader
        if self._queued:  # a prompt from the command line: say which session it goes to before echoing it
            self.start_loader()
            self._wait_ready()
            self._above.flush()
        interrupted = False
        while True:
            if self.ready.is_set() and self.failure is None:
                self._above.flush()
            queued = self._queued.pop(0) if self._queued else None
            default, self._typeahead = (queued, self._typeahead) if queued is not None else (self._typeahead, "")
            try:
                # A line typed ahead is shown on the prompt and submitted at once, like a shell's type-ahead.
                text = prompt.prompt(default=default, accept_default=queued is not None)
            except KeyboardInterrupt:
                if interrupted:
                    return 0
                interrupted = True
                _plain("Press Ctrl-C again to quit (or Ctrl-D).", "ansibrightblack")
                continue
            except EOFError:
                return 0
            interrupted = False
            if not text.strip():
                continue
            try:
                if not self._handle(text):
                    return 0
            except KeyboardInterrupt:
                if self.state is not None:
                    self.state.renderer.close()
                _plain("Interrupted.", "ansiyellow")


def run_repl(runtimes: Runtimes, loaded: LoadedSettings, first_message: str | None = None) -> int:
    """The interactive mode (``first_message`` is sent at once); returns the process exit code."""
    runtimes.refuse_a_held_session(loaded.settings)  # before the prompt: what is typed then is not lost
    return Repl(runtimes, loaded, first_message).loop()

