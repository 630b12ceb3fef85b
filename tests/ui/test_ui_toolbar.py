"""The toolbar under a running turn: meter, seconds, type-ahead; and the renderer keeping it at the bottom."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator

import pytest
from rich.console import Console
from rich.text import Text
from ui_harness import Pty, info

from pi_compact.agent.events import AgentStart, MessageEnd, Notice
from pi_compact.ui.input import TurnKeys
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.status import StatusInfo
from pi_compact.ui.toolbar import Toolbar, toolbar_text


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pty() -> Iterator[Pty]:
    terminal = Pty()
    yield terminal
    terminal.close()


def test_toolbar_shows_context_used_of_the_window_where_compaction_starts_and_seconds() -> None:
    line = toolbar_text(info(tokens=41200, window=128000, threshold=117760), 12.7, [], "")
    assert line.plain == "ctx 41,200/128,000 (32%) · compaction at 92% · 12 s"


def test_toolbar_marks_an_estimate_and_an_unknown_window() -> None:
    line = toolbar_text(info(tokens=900, window=None, threshold=None, from_usage=False), 0, [], "")
    assert line.plain == "ctx ~900/… · compaction at … · 0 s"


def test_toolbar_says_when_auto_compaction_is_off() -> None:
    assert "· auto-compaction off ·" in toolbar_text(info(auto_compact=False), 3, [], "").plain


def test_toolbar_shows_queued_lines_and_the_unfinished_one_on_a_second_line() -> None:
    lines = toolbar_text(info(), 4, ["fix the test", "then [bold]run[/bold]"], "and the par").plain.splitlines()
    assert lines[1] == "queued: fix the test | then [bold]run[/bold] · typing: and the par▏"


def test_toolbar_drops_control_sequences_from_typed_text() -> None:
    assert toolbar_text(info(), 1, [], "a\x1b[31mb\nc").plain.splitlines()[1] == "typing: ab ⏎ c▏"


def test_toolbar_reads_the_meter_at_most_once_a_second_and_keeps_it_when_a_read_fails() -> None:
    clock, reads = Clock(), []

    def meter() -> StatusInfo:
        reads.append(clock.now)
        if len(reads) == 2:
            raise RuntimeError("list changed during the read")
        return info(tokens=len(reads))

    toolbar = Toolbar(meter, lambda: [], clock=clock)
    assert toolbar().plain.startswith("ctx 1/")
    clock.now += 0.5
    toolbar()
    clock.now += 0.6
    assert toolbar().plain.startswith("ctx 1/")  # the second read failed: the first numbers stay
    clock.now += 1.0
    assert toolbar().plain.startswith("ctx 3/")
    assert reads == [50.0, 51.1, 52.1]


def test_toolbar_lists_lines_waiting_from_before_then_the_keys_typed_during_the_work(pty: Pty) -> None:
    toolbar = Toolbar(lambda: info(), lambda: ["queued earlier"], typed="carried", clock=Clock())
    assert toolbar().plain.splitlines()[1] == "queued: queued earlier · typing: carried▏"
    with TurnKeys(lambda: None, stream=pty.stream, typed="carried") as keys:
        toolbar.watch(keys)
        os.write(pty.master, b" on\rnext")
        threading.Event().wait(0.3)
        assert toolbar().plain.splitlines()[1] == "queued: queued earlier | carried on · typing: next▏"


def test_turn_keys_continue_an_unfinished_line_carried_over_from_before(pty: Pty) -> None:
    with TurnKeys(lambda: None, stream=pty.stream, typed="unfinished") as keys:
        os.write(pty.master, b"\x7f\x7f thought")
        threading.Event().wait(0.3)
    assert keys.typed == "unfinish thought"
    assert keys.lines == []


def renderer() -> tuple[TerminalRenderer, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None, force_terminal=True, highlight=False)
    return TerminalRenderer(console), buffer


def test_a_footer_keeps_the_live_region_up_below_each_view_until_it_is_removed() -> None:
    shown, buffer = renderer()
    shown.set_footer(lambda: Text("TOOLBAR"))
    shown(AgentStart())
    assert "TOOLBAR" in buffer.getvalue()
    shown(MessageEnd({"role": "assistant", "content": [{"type": "text", "text": "Done."}], "stopReason": "stop"}))
    assert shown.current_view() is None
    shown(Notice("printed above the toolbar"))
    assert buffer.getvalue().rindex("printed above the toolbar") < buffer.getvalue().rindex("TOOLBAR")
    shown.set_footer(None)
    after = len(buffer.getvalue())
    shown(Notice("after the turn"))
    assert "TOOLBAR" not in buffer.getvalue()[after:]
