"""Keyboard input: the prompt (prompt_toolkit) and the keys watched while a turn runs.

``make_prompt`` builds the prompt; ``TurnKeys`` watches Esc and type-ahead during a turn;
``quiet_terminal`` keeps the terminal from echoing keys between turns.
"""

from __future__ import annotations

import codecs
import os
import re
import select
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output

from pi_compact.paths import ensure_private_dir

PROMPT = "pi> "
_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|O.|.)?")


class SlashCompleter(Completer):
    """Completes ``/command`` names, then the arguments a command accepts."""

    def __init__(
        self, commands: Callable[[], Sequence[tuple[str, str]]], arguments: Callable[[str], Sequence[str]]
    ) -> None:
        self._commands = commands
        self._arguments = arguments

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        command, space, rest = text.partition(" ")
        if not space:
            for name, meta in self._commands():
                if name.startswith(command):
                    yield Completion(name, start_position=-len(command), display_meta=meta)
            return
        word = rest.lstrip()
        if " " in word:
            return
        for option in self._arguments(command):
            if option.startswith(word) and option != word:
                yield Completion(option, start_position=-len(word))


def key_bindings(on_expand: Callable[[], None] | None = None,
                 on_cycle_thinking: Callable[[], None] | None = None) -> KeyBindings:
    """The prompt's keys; ``on_expand`` (Ctrl-O) and ``on_cycle_thinking`` (Shift+Tab, pi's key) print
    above the prompt, leaving what is typed alone."""
    bindings = KeyBindings()

    if on_cycle_thinking is not None:
        cycle = on_cycle_thinking

        @bindings.add("s-tab")
        def _cycle_thinking(event: KeyPressEvent) -> None:
            run_in_terminal(cycle)

    if on_expand is not None:
        expand = on_expand

        @bindings.add("c-o")
        def _expand(event: KeyPressEvent) -> None:
            run_in_terminal(expand)

    @bindings.add("enter")
    def _send(event: KeyPressEvent) -> None:
        event.current_buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    @bindings.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()  # first clear what was typed; only an empty prompt counts towards exiting
        else:
            event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    return bindings


def open_history(path: Path | None) -> History:
    """A file history at ``path`` (its directory is created); in memory if that is impossible."""
    if path is None:
        return InMemoryHistory()
    try:
        ensure_private_dir(path.parent)
        path.touch(mode=0o600, exist_ok=True)
        os.chmod(path, 0o600)  # user-only even if made before: prompts can quote secrets
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


def _continuation(width: int, line_number: int, wrap_count: int) -> FormattedText:
    if wrap_count > 0:
        return FormattedText([])  # a long line simply wraps, as in any terminal
    return FormattedText([("class:continuation", "." * (width - 1) + " ")])


# History in a file (``paths.history_file()``), Enter sends, Alt-Enter (Esc then Enter) and Ctrl-J insert a
# newline, a bracketed paste of several lines stays in the editor, slash commands and their arguments complete.
# Ctrl-C clears a non-empty line and ends an empty prompt with ``KeyboardInterrupt`` (the REPL exits on the
# second one in a row); Ctrl-D on an empty line raises ``EOFError``.
def make_prompt(
    history: History, completer: Completer, *, input: Input | None = None, output: Output | None = None,
    on_expand: Callable[[], None] | None = None, on_cycle_thinking: Callable[[], None] | None = None,
) -> PromptSession[str]:
    """The REPL's prompt session (``input``/``output`` default to the terminal; tests pass pipes)."""
    return PromptSession(
        message=FormattedText([("bold ansicyan", PROMPT)]),
        multiline=True,  # Enter is rebound to send; the newline keys insert line breaks
        key_bindings=key_bindings(on_expand, on_cycle_thinking),
        history=history,
        completer=completer,
        complete_while_typing=True,
        prompt_continuation=_continuation,
        reserve_space_for_menu=6,
        input=input,
        output=output,
    )


def _quiet_mode(fd: int) -> list[Any] | None:
    """Switch ``fd`` to cbreak without CR-to-NL translation; the previous attributes (None if not a tty)."""
    try:
        import termios
        import tty

        if not os.isatty(fd):
            return None
        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd, termios.TCSANOW)  # no echo, no line buffering; Ctrl-C still signals
        mode = termios.tcgetattr(fd)
        mode[0] &= ~termios.ICRNL  # Enter stays "\r" (send), never becomes "\n" (the newline key)
        termios.tcsetattr(fd, termios.TCSANOW, mode)
        return saved
    except (ImportError, AttributeError, ValueError, OSError):
        return None  # not a terminal (pipe, test runner, Windows)


def _restore_mode(fd: int, saved: list[Any] | None) -> None:
    if saved is not None:
        import termios

        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


# The same mode as TurnKeys (no echo, no line editing, Enter kept as CR), for the whole REPL. Otherwise keys
# typed in the moment between a turn and the next prompt would be echoed by the terminal and their Enter turned
# into a newline instead of a send.
class quiet_terminal:  # noqa: N801 - used like a function: ``with quiet_terminal():``
    """For the whole REPL: the terminal mode ``TurnKeys`` uses, restored on exit."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._fd = -1
        self._saved: list[Any] | None = None

    def __enter__(self) -> quiet_terminal:
        stream = self._stream if self._stream is not None else sys.stdin
        try:
            self._fd = stream.fileno()
        except (AttributeError, ValueError, OSError):
            return self
        self._saved = _quiet_mode(self._fd)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _restore_mode(self._fd, self._saved)


def take_typeahead(source: Input) -> bytes:
    """Keys prompt_toolkit read past the end of the last prompt (it keeps them for the next prompt).

    When keys come fast, the prompt that Enter ended may already have read what followed; handing
    that to ``TurnKeys`` keeps it in order with what arrives during the turn (its Enter included).
    """
    from prompt_toolkit.input.typeahead import get_typeahead

    return "".join(key.data for key in get_typeahead(source)).encode()


# Only while a turn or compaction runs: Esc calls ``on_escape``; other typing is type-ahead, as in a shell: each
# line ended with Enter is queued (the REPL submits it after the turn) and an unfinished line becomes the next
# prompt's text; ``typed`` is an unfinished line carried over from before (a queued line ran first), which the
# keys continue. It does nothing when stdin is not a terminal. Ctrl-C stays a signal (cbreak mode keeps ISIG),
# which the REPL turns into a cancel.
class TurnKeys:
    """Watches the terminal while a turn runs: Esc cancels, typed text is kept for the next prompt."""

    def __init__(
        self, on_escape: Callable[[], None], stream: TextIO | None = None, pending: bytes = b"",
        tap: Callable[[bytes], bool] | None = None, typed: str = "",
    ) -> None:
        self._on_escape = on_escape
        self._tap = tap  # a question asked during the turn (approval) takes keys first
        self._stream = stream
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd = -1
        self._saved: list[Any] | None = None
        self._typed: list[str] = list(typed)
        self._lines: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.feed(pending)

    @property
    def typed(self) -> str:
        """The unfinished line typed during the turn (control keys dropped, backspace applied)."""
        return "".join(self._typed)

    @property
    def lines(self) -> list[str]:
        """Lines typed and ended with Enter during the turn, oldest first."""
        return list(self._lines)

    def __enter__(self) -> TurnKeys:
        stream = self._stream if self._stream is not None else sys.stdin
        try:
            fd = stream.fileno()
        except (AttributeError, ValueError, OSError):
            return self
        self._saved = _quiet_mode(fd)
        if self._saved is None:
            return self  # not a terminal: Ctrl-C alone cancels
        self._fd = fd
        self._thread = threading.Thread(target=self._watch, name="turn-keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        _restore_mode(self._fd, self._saved)

    def _readable(self, timeout: float) -> bool:
        return bool(select.select([self._fd], [], [], timeout)[0])

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                if not self._readable(0.05):
                    continue
                data = os.read(self._fd, 1024)
                if data == b"\x1b" and not self._readable(0.03):
                    self._on_escape()  # a lone Esc; a key like an arrow sends more bytes at once
                    continue
                if data == b"\x1b":
                    data += os.read(self._fd, 1024)
            except OSError:
                return
            if not data:
                return
            if self._tap is not None and self._tap(data):
                continue
            self.feed(data)

    def feed(self, data: bytes) -> None:
        """Keep the printable part of what was typed."""
        text = _SEQUENCE.sub("", self._decoder.decode(data))
        for char in text:
            if char in "\x7f\x08":
                if self._typed:
                    self._typed.pop()
            elif char in "\r\n":
                if "".join(self._typed).strip():
                    self._lines.append("".join(self._typed))
                self._typed = []
            elif char.isprintable() or char == "\t":
                self._typed.append(char)
