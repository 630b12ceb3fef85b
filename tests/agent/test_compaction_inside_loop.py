"""Issue 35.2: a tool loop whose newest result is larger than keepRecentTokens still compacts the older turns.

pi's cut rule finds no cut when no valid point follows the message that fills the budget (a big tool
result at the end), and keeps everything. Here the cut goes before that message instead: the two
older turns are summarized inside the loop, the loop answers, and automatic compaction stays on.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import (
    SETTINGS,
    _system_of,
    make_harness,
    outside_summary,
    padded,
    request_text,
    summary_in,
    summary_reply,
)
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.events import CompactionEnd, Notice
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.llm.protocol import ModelInfo
from pi_compact.ui.compaction_view import result_block

# reserve 2,000 of an 8,384 window: the threshold is 6,384 tokens.
LOOP_INFO = ModelInfo("openai/scripted", "openai", 8_384, None)
LOOP_SETTINGS = replace(SETTINGS, compaction=replace(SETTINGS.compaction, keep_recent_tokens=1_000))


def _notes(name: str) -> str:
    """About 6,500 tokens (chars/4) of notes."""
    line = f"{name}: a long line of project notes that nobody asked to read in full ....\n"
    return line * (26_000 // len(line))


def _run_the_loop(scripted_server: ScriptedServer, tmp_path: Path):  # type: ignore[no-untyped-def]
    h = make_harness(scripted_server, tmp_path, settings=LOOP_SETTINGS, info=LOOP_INFO)
    (h.cwd / "notes.md").write_text(_notes("notes"), encoding="utf-8")
    (h.cwd / "design.md").write_text(_notes("design"), encoding="utf-8")
    scripted_server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    scripted_server.enqueue(
        Reply(text=padded("ONE-ANSWER", 1_200), prompt_tokens=1_300, completion_tokens=1_200),
        Reply(text=padded("TWO-ANSWER", 1_200), prompt_tokens=3_800, completion_tokens=1_200),
    )
    h.session.prompt(padded("ONE-QUESTION", 1_200))
    h.session.prompt(padded("TWO-QUESTION", 1_200))
    scripted_server.enqueue(
        Reply(tool_calls=(ToolCallReply("read", {"path": "notes.md"}),), prompt_tokens=5_100),
        Reply(tool_calls=(ToolCallReply("read", {"path": "design.md"}),), prompt_tokens=7_000),
        Reply(text="ANSWER-FROM-THE-NOTES", prompt_tokens=7_100),
    )
    final = h.session.prompt("What do the notes and the design say?")
    return h, final


def test_the_older_turns_are_compacted_inside_the_loop_and_the_loop_answers(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h, final = _run_the_loop(scripted_server, tmp_path)
    assert final is not None and final["content"] == [{"type": "text", "text": "ANSWER-FROM-THE-NOTES"}]
    loop_requests = h.agent_requests()[2:]
    assert len(loop_requests) == 3
    # The request after the first big result already carries the summary instead of the older turns.
    second = loop_requests[1]
    assert summary_in(second)
    assert "ONE-QUESTION" not in outside_summary(second) and "TWO-ANSWER" not in request_text(second)
    assert "notes: a long line" in request_text(second)
    written = [e for e in h.events if isinstance(e, CompactionEnd) and e.result is not None]
    assert written and written[0].reason == "threshold"
    assert scripted_server.pending == 0


def test_automatic_compaction_stays_on_through_the_loop(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h, _ = _run_the_loop(scripted_server, tmp_path)
    assert not [e for e in h.events if isinstance(e, Notice) and "Automatic compaction is off" in e.text]
    assert h.session.auto_compact is True
    assert h.session.compactions >= 2  # the older turns in the loop, the loop's first big read later


def test_the_compaction_says_it_kept_more_than_keep_recent_tokens(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h, _ = _run_the_loop(scripted_server, tmp_path)
    first = next(e for e in h.events if isinstance(e, CompactionEnd) and e.result is not None)
    assert first.result is not None
    details = first.result["details"]
    assert details["keptOverBudget"] is True and details["splitTurn"] is True
    [entry] = [e for e in h.entries() if e["type"] == "compaction"][:1]
    assert entry["details"]["keptOverBudget"] is True
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(result_block(first.result, 1.0))
    assert "Kept more than keepRecentTokens" in console.export_text()
