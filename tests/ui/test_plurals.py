"""Issue 35.9: counts of one are singular ("1 model turn", "1 entry"), wherever a count is printed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, make_model_harness
from rich.console import Console

from pi_compact.agent.events import Notice, TreeOutcome
from pi_compact.llm.scripted import ScriptedCall, ScriptedReply
from pi_compact.ui.report import render_dry_run
from pi_compact.ui.tree_view import moved_renderable


def _shown(renderable: object) -> str:
    console = Console(record=True, width=200)
    console.print(renderable)
    return " ".join(console.export_text().split())


def test_a_limit_of_one_turn_says_one_model_turn(tmp_path: Path) -> None:
    replies = [ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": "echo 1"}),))]
    h = make_model_harness(tmp_path, *replies, settings=replace(SETTINGS, max_turns=1))
    h.session.prompt("Count.")
    [notice] = [e for e in h.events if isinstance(e, Notice)]
    assert notice.text.startswith("Stopped after 1 model turn (the limit is 1;")


def test_a_move_that_leaves_one_entry_behind_says_one_entry() -> None:
    kept = TreeOutcome("a", "b", "c", summarized=1)
    assert "Moved; 1 entry of the branch left behind stays in the file (not summarized)." in _shown(
        moved_renderable(kept))
    summarized = TreeOutcome("a", "b", "c", summary="S", source="model", summarized=1)
    assert "the branch left behind (1 entry) was summarized by the model." in _shown(moved_renderable(summarized))
    assert "(2 entries)" in _shown(moved_renderable(replace(summarized, summarized=2)))


def test_the_dry_run_says_one_entry_summarized_and_in_the_turn_prefix() -> None:
    console = Console(record=True, width=200)
    plan = {"first_kept_entry_id": "k", "summarize_entry_ids": ["a"], "is_split_turn": True,
            "turn_prefix_entry_ids": ["b"], "previous_summary": None, "read_files": [], "modified_files": []}
    report = {"context_tokens": 100, "should_compact": False, "plan": plan, "context_roles": ["user"]}
    render_dry_run(console, report, session="s.jsonl", window=1000, threshold=900)
    shown = " ".join(console.export_text().split())
    assert "Summarized 1 entry" in shown and "yes, 1 entry in the turn prefix" in shown
