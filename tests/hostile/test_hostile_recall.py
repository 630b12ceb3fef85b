"""A hostile regular expression from the model: ``recall`` answers with an error text within its limit, and
Esc stops it within a second (``re`` alone would backtrack for hours holding the GIL)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from builders import assistant, chain, compaction, structured_summary, user
from deadline import run_within
from recall_harness import open_store

from pi_compact.agent.tools import ToolContext
from pi_compact.agent.tools.recall import REGEX_LIMIT_S, RecallTool
from pi_compact.cancel import CancelToken

RUNAWAY = "(a+)+$"


def _large_store(tmp_path: Path, messages: int = 400) -> RecallTool:
    # Each message a long run of "a" ended by "!": (a+)+$ tries every split of the run before failing.
    turns = []
    for n in range(messages):
        turns += [user("a" * 20_000 + f"! note {n}"), assistant(f"ok {n}")]
    entries = chain(*turns, user("latest"), compaction(structured_summary("a"), f"test-id-{2 * messages}"))
    return RecallTool(open_store(tmp_path, entries))


def test_a_runaway_regular_expression_is_an_error_text_within_its_limit(tmp_path: Path) -> None:
    tool = _large_store(tmp_path)
    started = time.monotonic()
    output = run_within(tool, {"query": RUNAWAY}, ToolContext(tmp_path), seconds=15)
    took = time.monotonic() - started
    assert output.is_error
    assert "took too long and was stopped" in output.text and RUNAWAY in output.text
    assert took < REGEX_LIMIT_S + 4  # the limit, the index build, regex checking its clock now and then
    # The tool is usable again at once: an ordinary query answers normally.
    found = run_within(tool, {"query": "note 7", "scope": "branch"}, ToolContext(tmp_path), seconds=15)
    assert not found.is_error


def test_esc_during_a_runaway_regular_expression_gives_control_back_within_a_second(tmp_path: Path) -> None:
    tool = _large_store(tmp_path, messages=50)
    tool.index.update(tool.store.entries)  # the index is built: only the search is timed
    token = CancelToken()
    timer = threading.Timer(0.2, token.cancel)
    timer.start()
    started = time.monotonic()
    output = run_within(tool, {"query": RUNAWAY, "scope": "branch"}, ToolContext(tmp_path, cancel=token), seconds=15)
    assert output.is_error
    assert time.monotonic() - started < 1.2
