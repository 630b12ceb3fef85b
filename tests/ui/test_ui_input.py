"""The prompt's keys and completion (through prompt_toolkit pipe input), and the keys watched during a turn."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from ui_harness import Pty  # noqa: F401

from pi_compact.ui.input import (
    SlashCompleter,
    TurnKeys,
    make_prompt,
    open_history,
    quiet_terminal,
    take_typeahead,
)

COMMANDS = [("/compact", "compact now"), ("/context", "context"), ("/autocompact", "toggle"), ("/settings", "")]


def arguments(command: str) -> list[str]:
    return {"/autocompact": ["on", "off"], "/settings": ["reload"]}.get(command, [])


def completer() -> SlashCompleter:
    return SlashCompleter(lambda: COMMANDS, arguments)


def completions(text: str) -> list[str]:
    return [c.text for c in completer().get_completions(Document(text), CompleteEvent(completion_requested=True))]


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def read(pipe: PipeInput, keys: str) -> str:
    """Type ``keys`` into a fresh prompt and return what it submitted."""
    pipe.send_text(keys)
    session = make_prompt(InMemoryHistory(), completer(), input=pipe, output=DummyOutput())
    return session.prompt()


def test_command_names_complete_from_a_slash() -> None:
    assert completions("/co") == ["/compact", "/context"]


def test_command_arguments_complete_after_the_command() -> None:
    assert completions("/autocompact o") == ["on", "off"]
    assert completions("/settings ") == ["reload"]


def test_plain_text_gets_no_completion() -> None:
    assert completions("compact the code") == []


def test_enter_sends_the_line(pipe: PipeInput) -> None:
    assert read(pipe, "hello world\r") == "hello world"


def test_ctrl_j_inserts_a_newline_instead_of_sending(pipe: PipeInput) -> None:
    assert read(pipe, "first\nsecond\r") == "first\nsecond"


def test_alt_enter_inserts_a_newline_instead_of_sending(pipe: PipeInput) -> None:
    assert read(pipe, "first\x1b\rsecond\r") == "first\nsecond"


def test_a_bracketed_paste_of_several_lines_stays_in_the_editor(pipe: PipeInput) -> None:
    assert read(pipe, "\x1b[200~line one\r\nline two\r\nline three\x1b[201~ end\r") == (
        "line one\nline two\nline three end"
    )


def test_ctrl_c_clears_a_typed_line_and_keeps_the_prompt(pipe: PipeInput) -> None:
    assert read(pipe, "oops\x03kept\r") == "kept"


def test_ctrl_c_on_an_empty_prompt_interrupts(pipe: PipeInput) -> None:
    with pytest.raises(KeyboardInterrupt):
        read(pipe, "\x03")


def test_ctrl_d_on_an_empty_prompt_ends_input(pipe: PipeInput) -> None:
    with pytest.raises(EOFError):
        read(pipe, "\x04")


def test_keys_read_past_the_end_of_a_prompt_can_be_taken_back(pipe: PipeInput) -> None:
    assert read(pipe, "first\rsecond") == "first"
    assert take_typeahead(pipe) == b"second"
    assert take_typeahead(pipe) == b""


def test_history_file_and_its_directory_are_created(tmp_path: Path) -> None:
    path = tmp_path / "state" / "pi-compact" / "history"
    history = open_history(path)
    assert isinstance(history, FileHistory)
    history.store_string("first prompt")
    assert "first prompt" in path.read_text()


def test_history_falls_back_to_memory_when_the_directory_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert isinstance(open_history(blocker / "history"), InMemoryHistory)




@pytest.fixture
def pty() -> Iterator[Pty]:
    terminal = Pty()
    yield terminal
    terminal.close()


def test_escape_during_a_turn_cancels(pty: Pty) -> None:
    pressed = threading.Event()
    with TurnKeys(pressed.set, stream=pty.stream):
        os.write(pty.master, b"\x1b")
        assert pressed.wait(2)


def test_arrow_keys_during_a_turn_do_not_cancel(pty: Pty) -> None:
    pressed = threading.Event()
    with TurnKeys(pressed.set, stream=pty.stream) as keys:
        os.write(pty.master, b"\x1b[Aab")
        deadline = threading.Event()
        deadline.wait(0.3)
    assert not pressed.is_set()
    assert keys.typed == "ab"


def test_text_typed_during_a_turn_is_kept_with_backspace_applied(pty: Pty) -> None:
    with TurnKeys(lambda: None, stream=pty.stream) as keys:
        os.write(pty.master, "next questiom\x7fn 你好".encode())
        threading.Event().wait(0.3)
    assert keys.typed == "next question 你好"
    assert keys.lines == []


def test_lines_ended_with_enter_during_a_turn_are_queued(pty: Pty) -> None:
    with TurnKeys(lambda: None, stream=pty.stream) as keys:
        os.write(pty.master, b"/context\r\rsecond line\rpart")
        threading.Event().wait(0.3)
    assert keys.lines == ["/context", "second line"]
    assert keys.typed == "part"


def test_terminal_mode_is_restored_after_the_turn(pty: Pty) -> None:
    import termios

    before = termios.tcgetattr(pty.child)
    with TurnKeys(lambda: None, stream=pty.stream):
        assert termios.tcgetattr(pty.child)[3] != before[3]  # echo and line mode off during the turn
    assert termios.tcgetattr(pty.child) == before


def test_enter_during_a_turn_completes_text_the_prompt_had_already_read(pty: Pty) -> None:
    with TurnKeys(lambda: None, stream=pty.stream, pending=b"and the parser?") as keys:
        os.write(pty.master, b"\r")
        threading.Event().wait(0.3)
    assert keys.lines == ["and the parser?"]


def test_quiet_terminal_keeps_enter_as_a_send_and_restores_the_mode(pty: Pty) -> None:
    import termios

    before = termios.tcgetattr(pty.child)
    with quiet_terminal(pty.stream):
        during = termios.tcgetattr(pty.child)
        assert not during[0] & termios.ICRNL  # Enter typed between turns stays CR, not the newline key
        assert not during[3] & (termios.ECHO | termios.ICANON)
    assert termios.tcgetattr(pty.child) == before


def test_turn_keys_do_nothing_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    with open(tmp_path / "input.txt", "w+") as stream, TurnKeys(lambda: None, stream=stream) as keys:
        pass
    assert keys.typed == ""
