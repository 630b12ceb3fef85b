"""``recall`` precision (issue 23): identifiers and quoted phrases match whole, hits without the query's
exact terms are not returned, and an answer still in the live context is pointed to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import assistant, chain, compaction, structured_summary, user
from recall_harness import open_store

from pi_compact.agent.tools import ToolContext, ToolOutput, run_tool
from pi_compact.agent.tools.recall import RecallTool
from pi_compact.session.store import SessionStore


def recall(store: SessionStore, **args: Any) -> ToolOutput:
    return run_tool(RecallTool(store, 4000), args, ToolContext(Path(".")))


def needles(live: bool) -> list[dict[str, Any]]:
    """NEEDLE-0..2 (and NEEDLE-30) compacted; NEEDLE-3 compacted too, or in the live context when ``live``."""
    planted = [user(f"Remember NEEDLE-{n}: its value is {n * 111}.") for n in (0, 1, 2, 30)]
    fourth = user("Remember NEEDLE-3: its value is 333.")
    if live:
        return chain(*planted, user("keep"), compaction(structured_summary(), "test-id-4"), fourth, assistant("ok"),
                     user("What is the value of NEEDLE-3?"))
    return chain(*planted, fourth, user("keep"), compaction(structured_summary(), "test-id-5"), assistant("ok"))


def test_an_identifier_query_finds_only_that_identifier(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, needles(live=False)), query="value of NEEDLE-3")
    assert not output.is_error and output.details is not None
    assert output.details["entryIds"] == ["test-id-4"]
    assert "NEEDLE-0" not in output.text and "NEEDLE-30" not in output.text


def test_a_query_whose_answer_is_in_the_live_context_says_so(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, needles(live=True)), query="NEEDLE-3")
    assert output.is_error  # no compacted message is an answer
    assert "NEEDLE-0" not in output.text and "NEEDLE-2" not in output.text
    assert "it is in your current context (entry test-id-6)" in output.text


def test_a_match_also_in_the_live_context_is_noted_as_newer(tmp_path: Path) -> None:
    entries = chain(user("The staging port is 54317."), user("keep"), compaction(structured_summary(), "test-id-1"),
                    user("Changed: the staging port is 54318."), assistant("ok"), user("Which staging port?"))
    output = recall(open_store(tmp_path, entries), query="staging port")
    assert output.text.startswith("['staging port' is also in your current context (entry test-id-3), which is newer")
    assert "54317" in output.text


def test_a_quoted_phrase_matches_whole(tmp_path: Path) -> None:
    entries = chain(user("Use the blue deploy slot for releases."), user("Using the blue slot."), user("keep"),
                    compaction(structured_summary(), "test-id-2"), assistant("ok"))
    output = recall(open_store(tmp_path, entries), query='"blue slot"')
    assert output.details is not None and output.details["entryIds"] == ["test-id-1"]


def test_a_path_query_matches_the_whole_path(tmp_path: Path) -> None:
    entries = chain(user("Edited src/app.py.bak and docs/app.py notes."), user("Edited src/app.py to add retries."),
                    user("keep"), compaction(structured_summary(), "test-id-2"), assistant("ok"))
    output = recall(open_store(tmp_path, entries), query="src/app.py")
    assert output.details is not None and output.details["entryIds"] == ["test-id-1"]


def test_hits_without_the_querys_exact_terms_are_not_returned(tmp_path: Path) -> None:
    entries = chain(user("The staging port is 54317."), user("Ticket PAY-1234 is about refunds."), user("keep"),
                    compaction(structured_summary(), "test-id-2"), assistant("ok"))
    output = recall(open_store(tmp_path, entries), query="staging port of PAY-1234")
    assert output.details is not None and output.details["entryIds"] == ["test-id-1"]
