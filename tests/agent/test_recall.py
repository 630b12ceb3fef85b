"""``recall``: searching what compaction took out of the context, on our sessions, branches and pi's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import (
    assistant,
    chain,
    compaction,
    msg,
    structured_summary,
    tool_call,
    tool_result,
    user,
)
from fixtures_path import FIXTURES, needs_fixtures
from recall_harness import open_store  # noqa: F401

from pi_compact.agent.tools import ToolContext, ToolOutput, run_tool
from pi_compact.agent.tools.recall import RECALL_HINT, RecallTool, with_recall_hint
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.messages import COMPACTION_SUMMARY_PREFIX, convert_to_llm, text_of
from pi_compact.session.history import Query, hidden_end, walk
from pi_compact.session.store import SessionStore


def compacted_session() -> list[dict[str, Any]]:
    """Two turns behind a compaction that keeps the third (ids test-id-0..7)."""
    return chain(
        user("The staging database listens on port 54317."),  # 0
        assistant("Noted: staging port 54317."),  # 1
        user("Use the blue deploy slot for releases."),  # 2
        assistant("Using the blue slot.", tool_calls=[tool_call("bash", {"command": "deploy --slot blue"})]),  # 3
        tool_result("deployed to blue", tool_name="bash"),  # 4
        user("Now write the changelog."),  # 5: kept
        compaction(structured_summary("deploys"), "test-id-5"),  # 6
        assistant("Changelog written."),  # 7
    )




def recall(store: SessionStore, max_tokens: int = 4000, **args: Any) -> ToolOutput:
    return run_tool(RecallTool(store, max_tokens), args, ToolContext(Path(".")))


def test_hidden_end_is_the_latest_compactions_kept_boundary() -> None:
    path = compacted_session()
    assert hidden_end(path) == 5
    assert hidden_end(path[:5]) == 0  # nothing compacted yet


def test_hidden_end_hides_everything_before_a_compaction_whose_kept_entry_is_not_on_the_path() -> None:
    path = chain(user("a"), assistant("b"), compaction("s", "elsewhere"), user("c"))
    assert hidden_end(path) == 2


def test_recall_finds_a_compacted_message_with_its_id_role_and_time(tmp_path: Path) -> None:
    store = open_store(tmp_path, compacted_session())
    output = recall(store, query="staging port")
    assert not output.is_error
    assert "--- entry test-id-0 · user · 2025-01-01T00:00:00.000Z ---" in output.text
    assert "The staging database listens on port 54317." in output.text
    assert output.details is not None and output.details["entryIds"][:2] == ["test-id-1", "test-id-0"]


def test_recall_names_the_tool_of_a_tool_result(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, compacted_session()), query="deployed")
    assert "--- entry test-id-4 · toolResult of bash ·" in output.text


def test_recall_leaves_out_messages_still_in_context_unless_the_whole_branch_is_asked(tmp_path: Path) -> None:
    store = open_store(tmp_path, compacted_session())
    assert recall(store, query="changelog").is_error  # test-id-5 and 7 are in the context
    whole = recall(store, query="changelog", scope="branch")
    assert "test-id-5" in whole.text and "test-id-7" in whole.text


def test_recall_returns_one_message_in_full_by_entry_id(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, compacted_session()), entry_id="test-id-3")
    assert output.text.splitlines() == [
        "--- entry test-id-3 · assistant · 2025-01-01T00:00:00.000Z ---",
        "Using the blue slot.",
        "bash command=deploy --slot blue",
    ]


@pytest.mark.parametrize(("args", "says"), [
    ({"entry_id": "nope"}, "No entry 'nope' in this session"),
    ({"entry_id": "test-id-6"}, "Entry test-id-6 is a compaction entry and holds no message."),
    ({"query": "kubernetes helm"}, "No message in the compacted part of this conversation matches 'kubernetes helm'"),
    ({"query": "port(("}, "is not a valid regular expression"),
    ({}, "recall needs a query"),
    ({"query": "x", "scope": "everything"}, "recall scope must be one of compacted, branch, session"),
])
def test_a_bad_call_or_an_empty_result_is_an_error_text(tmp_path: Path, args: dict[str, Any], says: str) -> None:
    output = recall(open_store(tmp_path, compacted_session()), **args)
    assert output.is_error and says in output.text


def test_recall_before_any_compaction_says_everything_is_still_in_context(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, compacted_session()[:5]), query="port")
    assert output.is_error and "Nothing in this conversation has been compacted yet" in output.text


def test_a_regular_expression_query_matches_case_insensitively(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, compacted_session()), query=r"PORT \d{5}\.$")
    assert output.details is not None and output.details["entryIds"] == ["test-id-1", "test-id-0"]
    assert "2 messages in the compacted part of this conversation match" in output.text


def test_words_rank_messages_matching_more_of_them_first() -> None:
    query = Query.parse("blue deploy slot")
    assert query.words == ("blue", "deploy", "slot")
    assert (query.score("the blue deploy slot"), query.score("a red slot"), query.score("nothing")) == (3, 1, 0)
    assert query.locate("A Red SLOT") == (6, 10)


def test_a_regular_expression_keeps_its_escapes_when_searching_lower_cased_text() -> None:
    query = Query.parse(r"Port\s+\D\d{2}")
    assert query.score("port  x42".lower()) == 1
    assert query.score("port 442") == 0  # \D is still "not a digit"


def branched_session() -> list[dict[str, Any]]:
    """A compacted main line and a side branch from test-id-1 whose messages were never in this context."""
    entries = compacted_session()
    side = [
        msg(user("Try the green slot instead."), id="side-1", parent="test-id-1"),
        msg(assistant("Green slot configured."), id="side-2", parent="side-1"),
    ]
    return entries[:2] + side + entries[2:]  # the main line is still last in the file: it is the leaf


def test_recall_never_returns_messages_of_another_branch_unless_asked(tmp_path: Path) -> None:
    store = open_store(tmp_path, branched_session())
    assert store.leaf_id == "test-id-7"
    assert recall(store, query="green", scope="branch").is_error
    by_id = recall(store, entry_id="side-1")
    assert by_id.is_error and "is on another branch of this session" in by_id.text
    anywhere = recall(store, query="green", scope="session")
    assert "Try the green slot instead." in anywhere.text
    assert "Try the green slot instead." in recall(store, entry_id="side-1", scope="session").text


def test_recall_output_stays_within_its_cap_and_says_what_was_left_out(tmp_path: Path) -> None:
    facts = [user(f"Fact {n}: the widget number is {n * 7}. " + "padding words " * 40) for n in range(30)]
    entries = chain(*facts, user("keep"), compaction("s", "test-id-30"), assistant("ok"))
    output = recall(open_store(tmp_path, entries), max_tokens=400, query="widget number", limit=20)
    assert estimate_text_tokens(output.text) <= 400
    assert "more matches not shown: recall output is capped at 400 tokens (compaction.recallMaxTokens)" in output.text
    assert "30 messages" not in output.text and "at least 21 messages" in output.text
    assert "more beyond limit 20" in output.text


def test_a_long_message_is_read_in_pieces_by_offset(tmp_path: Path) -> None:
    long_text = "".join(f"line {n:04d} of the build log\n" for n in range(400))
    entries = chain(user("build"), tool_result(long_text), user("keep"), compaction("s", "test-id-2"))
    store = open_store(tmp_path, entries)
    first = recall(store, max_tokens=300, entry_id="test-id-1")
    assert estimate_text_tokens(first.text) <= 300
    assert first.details is not None
    end = first.details["end"]
    assert f"Call recall with entry_id test-id-1 and offset {end} for the rest." in first.text
    second = recall(store, max_tokens=300, entry_id="test-id-1", offset=end)
    assert second.details is not None and second.details["offset"] == end
    shown = first.text.split("---\n", 1)[1].split("\n[Characters")[0] + second.text.split("---\n", 1)[1].split(
        "\n[Characters")[0]
    assert long_text.startswith(shown) and len(shown) == second.details["end"]


def test_recall_does_not_find_its_own_earlier_results(tmp_path: Path) -> None:
    entries = chain(
        user("The secret is orange."),
        assistant(tool_calls=[tool_call("recall", {"query": "purple"}, "r1")]),
        tool_result("No message matches 'purple'", tool_call_id="r1", tool_name="recall"),
        user("keep"),
        compaction("s", "test-id-3"),
    )
    output = recall(open_store(tmp_path, entries), query="purple")
    assert output.is_error and "No message" in output.text


def test_the_hint_follows_the_summary_only_when_recall_is_offered() -> None:
    context = [{"role": "compactionSummary", "summary": "S", "tokensBefore": 9, "timestamp": 0}, user("hi")]
    with_hint = with_recall_hint(context)
    assert text_of(with_hint[0]["content"]) == COMPACTION_SUMMARY_PREFIX + "S\n</summary>\n\n" + RECALL_HINT
    assert with_recall_hint(context, recall=False) == convert_to_llm(context)
    assert context[0]["summary"] == "S"  # the stored summary (what pi reads) is unchanged


@needs_fixtures
def test_recall_reads_behind_compactions_that_pi_wrote(tmp_path: Path) -> None:
    store = SessionStore.open(FIXTURES / "pi-before-compaction.v3.jsonl", str(tmp_path), 0)
    branch = walk(store.by_id, store.leaf_id)
    assert sum(e.get("type") == "compaction" for e in branch) == 2 and hidden_end(branch) > 0
    output = recall(store, query=r"^alright, read @packages")
    assert not output.is_error
    assert "--- entry d6acc48f · user ·" in output.text
    full = recall(store, entry_id="d6acc48f")
    assert full.text.split("\n", 1)[1].startswith("alright, read @packages/coding-agent/src/main.ts")


def test_a_search_out_of_time_stops_where_it_is_and_says_how_far_back_it_read() -> None:
    from pi_compact.session.history import search

    entries = chain(*(user(f"message number {i}") for i in range(600)))
    asked = []

    def out_of_time() -> bool:  # asked every 256 positions, newest first: at 512, then at 256
        asked.append(True)
        return len(asked) == 2

    result = search(entries, Query.parse("message"), 1000, out_of_time=out_of_time)
    assert (result.stopped_at, result.complete, result.total) == (256, False, 599 - 256)
    assert [hit.entry_id for hit in result.hits][-1] == "test-id-257"


def test_recall_past_its_time_budget_answers_with_what_it_found_and_says_the_search_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pi_compact.agent.tools.recall as recall_module

    monkeypatch.setattr(recall_module, "SEARCH_BUDGET_S", 0.0)  # out of time at the first check (position 0)
    output = recall(open_store(tmp_path, compacted_session()), query=r"port \d{5}")
    assert output.details is not None and output.details["entryIds"] == ["test-id-1"]  # entry 0 was not read
    assert "the search stopped after 0 s; a query with a literal word searches further" in output.text
    assert "more beyond limit" not in output.text


def test_the_summary_tells_the_model_to_answer_questions_about_earlier_work_from_it_not_by_redoing_it() -> None:
    # Issue 33: a small model asked "which files did we change?" after a compaction started editing again.
    from datetime import date

    from pi_compact.agent.system_prompt import build_system_prompt

    with_hint = with_recall_hint([{"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 0}])
    assert "do not edit files or rerun commands to answer them" in text_of(with_hint[0]["content"])
    system = build_system_prompt("/w", date(2026, 1, 1), ["bash"])
    assert "is answered from the summary, not by redoing the work or running tools" in system


def test_a_call_the_loop_guard_refused_is_never_found_by_recall(tmp_path: Path) -> None:
    # Issue 44's walk on 7834eb3: `recall calc.py` answered first with the guard's own "Not run: ... `edit
    # calc.py` ..." result, which says nothing about calc.py but the call's name.
    refused = tool_result("Not run: the loop guard stopped this turn before this call because `edit calc.py` "
                          "was made 4 times.", tool_name="edit", is_error=True)
    refused["details"] = {"loopStop": True}
    store = open_store(tmp_path, chain(
        user("Fix calc.py."),
        assistant("", tool_calls=[tool_call("edit", {"path": "calc.py"})]),
        refused,
        user("Which files did we change?"),
        assistant("", tool_calls=[tool_call("read", {"path": "calc.py"})]),
        tool_result("1\tdef add(a, b):  # calc.py\n2\t    return a + b", tool_name="read"),
    ))
    found = recall(store, query="calc.py", scope="branch")
    assert not found.is_error
    assert "Not run" not in found.text and "return a + b" in found.text


def test_a_recall_answer_ends_by_asking_for_an_answer_from_its_lines(tmp_path: Path) -> None:
    # Issue 44's sixth walk: the embedded model recalled the codename four times, each answer holding its line.
    output = recall(open_store(tmp_path, compacted_session()), query="staging port")
    assert output.text.endswith("answer from them now: the same recall gives the same lines.]")


def test_recall_before_any_compaction_names_where_in_the_context_the_words_are(tmp_path: Path) -> None:
    output = recall(open_store(tmp_path, compacted_session()[:5]), query="54317")
    assert output.is_error and "'54317' is in entries test-id-1, test-id-0: answer from it there" in output.text
    (tmp_path / "b").mkdir()
    assert "answer from it" not in recall(open_store(tmp_path / "b", compacted_session()[:5]), query="helm").text
