"""grep is bounded: a runaway regex stops at the time limit, a cancel stops it at once, pipes are refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from deadline import run_within

from pi_compact.agent.tools import GrepTool, ToolContext
from pi_compact.agent.tools import grep as grep_module
from pi_compact.cancel import CancelToken

# (a+)+$ against a run of a's with no match at the end tries every split of the run: 2**n ways. With 27
# a's that is several seconds of Python's re (so code without a time limit still ends, and fails the
# test); with 40 it is days, which only a killed search survives.
_RUNAWAY = "(a+)+$"


def _catastrophic_tree(root: Path, run: int) -> Path:
    (root / "a_first.txt").write_text("aaa\n")
    (root / "b_slow.txt").write_text("a" * run + "!\n")
    return root


def test_runaway_regex_stops_at_time_limit_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "TIME_LIMIT_S", 1.0, raising=False)
    _catastrophic_tree(tmp_path, run=27)
    out = run_within(GrepTool(), {"pattern": _RUNAWAY}, ToolContext(cwd=tmp_path), seconds=20)
    assert out.is_error
    assert out.text.startswith("a_first.txt:1: aaa\n\n[Matches found before the stop: 1.]\n")
    assert "[grep stopped after its 1 s time limit while searching . for '(a+)+$'." in out.text


def test_cancel_interrupts_a_runaway_regex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "TIME_LIMIT_S", 600.0, raising=False)
    _catastrophic_tree(tmp_path, run=40)
    cancel = CancelToken()
    timer = threading.Timer(0.3, cancel.cancel)
    timer.start()
    try:
        out = run_within(GrepTool(), {"pattern": _RUNAWAY}, ToolContext(cwd=tmp_path, cancel=cancel), seconds=20)
    finally:
        timer.cancel()
    assert out.is_error
    assert out.text == "Cancelled while searching .."


def test_runaway_search_process_is_gone_after_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "TIME_LIMIT_S", 0.5, raising=False)
    _catastrophic_tree(tmp_path, run=40)
    before = _children()
    run_within(GrepTool(), {"pattern": _RUNAWAY}, ToolContext(cwd=tmp_path), seconds=20)
    assert _children() - before == set()


def test_grep_on_a_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = run_within(GrepTool(), {"pattern": "x", "path": "pipe"}, ToolContext(cwd=tmp_path), seconds=20)
    assert out.is_error
    assert out.text == "pipe is a FIFO (named pipe); grep searches regular files and directories."


def test_grep_single_file_still_names_it(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("zero\nneedle here\n")
    out = run_within(GrepTool(), {"pattern": "needle", "path": "one.txt"}, ToolContext(cwd=tmp_path))
    assert out.text == "one.txt:2: needle here"


def _children() -> set[int]:
    """Pids of this process's live children, from /proc."""
    me = str(os.getpid())
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] not in ("Z", "X"):
            found.add(int(entry))
    return found
