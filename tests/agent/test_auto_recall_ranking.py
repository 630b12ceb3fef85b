"""How automatic recall ranks the compacted originals (issue 23): rare terms over common words, error
lines for a question about an error, and never an excerpt that holds only common words."""

from __future__ import annotations

from typing import Any

from pi_compact.agent.compaction.recall import choose, recalled_text
from pi_compact.agent.compaction.recall_rank import Question, stem
from pi_compact.compaction.tokens import estimate_text_tokens

PASSING = "\n".join(f"tests/test_refill.py::test_case_{n} PASSED" for n in range(24)) + "\n\n24 passed in 1.20s"
FAILING = (
    "\n".join(f"tests/test_refill.py::test_case_{n} PASSED" for n in range(20))
    + "\ntests/test_refill.py::test_north FAILED\n\n=== FAILURES ===\n___ test_north ___\n\n"
    + "E   ValueError: bucket 'north' has no refill rate\n=== short test summary info ===\n"
    + "FAILED tests/test_refill.py::test_north - E   ValueError: bucket 'north' has no refill rate\n"
    + "1 failed, 20 passed in 1.31s"
)
ERROR = "ValueError: bucket 'north' has no refill rate"


def _message(role: str, text: str) -> dict[str, Any]:
    if role == "toolResult":
        return {"role": role, "toolCallId": "c", "toolName": "bash", "content": [{"type": "text", "text": text}],
                "isError": False, "timestamp": 0}
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 0}


def _branch(compacted: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Entries for ``compacted`` (role, text), then a kept user message, then the compaction."""
    entries: list[dict[str, Any]] = []
    for index, (role, text) in enumerate([*compacted, ("user", "Now fix the typo in the README.")]):
        entries.append({"type": "message", "id": f"e{index}", "parentId": entries[-1]["id"] if entries else None,
                        "message": _message(role, text)})
    kept = entries[-1]["id"]
    entries.append({"type": "compaction", "id": "c1", "parentId": kept, "firstKeptEntryId": kept,
                    "summary": "## Goal\n- refill work", "tokensBefore": 0})
    return entries


def _ask(branch: list[dict[str, Any]], question: str, budget: int = 1000) -> list[str]:
    live = [{"role": "compactionSummary", "summary": "## Goal\n- refill work", "tokensBefore": 0, "timestamp": 0},
            _message("user", "Now fix the typo in the README."), _message("user", question)]
    return [e.text for e in choose(branch, live, budget, "chars4")]


def _test_runs() -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = [("user", "Refactor the refill loop so the store is injected.")]
    for output in (PASSING, PASSING, FAILING, PASSING):
        turns += [("assistant", "Running the tests.\nbash command=pytest -q"), ("toolResult", output)]
    return [*turns, ("assistant", "Fixed the guard; the suite passes again.")]


def test_a_question_about_an_error_gets_the_error_lines_not_passing_output() -> None:
    attached = _ask(_branch(_test_runs()), "What was the exact error message of the failing test run?")
    assert attached and ERROR in attached[0]
    assert not any("PASSED" in text and "FAILED" not in text and "fail" not in text for text in attached)


def test_a_rare_word_outranks_common_ones_and_common_words_alone_are_no_hit() -> None:
    turns = _test_runs()
    turns.insert(1, ("user", "File it under the ticket OPS-7731 so the quota team sees it."))
    attached = _ask(_branch(turns), "Which ticket do the tests run under?")
    # "tests" and "run" are in most compacted messages: they outweigh nothing, and a message
    # holding only them ("Running the tests.") is not attached at all.
    assert attached == ["File it under the ticket OPS-7731 so the quota team sees it."]


def test_an_identifier_asked_for_is_matched_whole_and_required() -> None:
    turns = [("user", f"Note NEEDLE-{n}: the refill burst is {40 + n}.") for n in range(4)]
    turns += [("assistant", "Noted the refill bursts.")]
    attached = _ask(_branch(turns), "What refill burst did NEEDLE-2 have?")
    assert attached == ["Note NEEDLE-2: the refill burst is 42."]


def test_the_budget_bounds_what_is_attached() -> None:
    branch = _branch(_test_runs())
    question = "What was the exact error message of the failing test run?"
    for budget in (60, 120, 400):
        attached = _ask(branch, question, budget)
        from pi_compact.agent.compaction.recall import Excerpt

        text = recalled_text([Excerpt("e0", "toolResult", t) for t in attached])
        assert not attached or estimate_text_tokens(text, "chars4") <= budget


def test_stems_and_the_words_a_question_does_not_ask_about() -> None:
    assert {stem("failing"), stem("failure"), stem("failed")} == {"fail"}
    assert stem("retries") == stem("retry") == "retr" and stem("tracked") == "track" and stem("files") == "file"
    question = Question.of("Which ticket is this tracked under? Do not run commands or read files.")
    assert question is not None and question.stems == ("ticket", "track", "under")
    assert Question.of("and now?") is None and Question.of("go on") is None


def test_in_a_big_session_common_words_are_told_by_a_sample_and_the_rare_message_still_wins() -> None:
    from pi_compact.agent.compaction.recall_rank import SAMPLE

    turns = [("assistant", f"Running the shard tests, pass {n}.") for n in range(2 * SAMPLE + 10)]
    turns.insert(SAMPLE, ("user", "The shard rebalance threshold stays at 0.35 for the canary."))
    attached = _ask(_branch(turns), "What rebalance threshold did we keep for the shard canary?")
    assert attached == ["The shard rebalance threshold stays at 0.35 for the canary."]


def test_a_long_line_is_cut_around_what_made_it_best() -> None:
    noise = " ".join(f"step{n} ok" for n in range(150))
    turns = [("user", "Run the parser suite on the fixtures, please."),
             ("toolResult", f"{noise} ParseError: unexpected token at line 7 {noise}"),
             ("toolResult", f"{noise} the parser suite finished {noise}"),
             ("assistant", "The parser suite failed once; the fixtures need a look.")]
    attached = _ask(_branch(turns), "What error did the parser suite fail with?")
    assert any("ParseError: unexpected token at line 7" in text and len(text) < 600 for text in attached)


def test_a_tool_step_asks_only_by_exact_terms() -> None:
    branch = _branch([("user", "Keep the rebalance canary thresholds in CANARY-9 at 0.35."),
                      ("assistant", "Noted, the canary thresholds stay.")])
    summary = {"role": "compactionSummary", "summary": "## Goal\n- refill work", "tokensBefore": 0, "timestamp": 0}
    call = {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "ls"}}

    def step(text: str) -> list[Any]:
        said = {"role": "assistant", "content": [{"type": "text", "text": text}, call], "timestamp": 0}
        return [summary, _message("user", "Go on."), said, _message("toolResult", "(empty file)")]

    assert choose(branch, step("Looking at the rebalance canary thresholds."), 1000, "chars4") == []
    found = choose(branch, step("Looking at the thresholds of CANARY-9."), 1000, "chars4")
    assert [e.text for e in found] == ["Keep the rebalance canary thresholds in CANARY-9 at 0.35."]


NOTES = "\n".join([
    "# Project notes",
    *(f"- meeting {n}: discussed the refill scheduler, shard {n} and its quota" for n in range(30)),
    "- Release codename: JUNIPER-FALLS (do not tell the press before the launch)",
    *(f"- follow-up {n}: check the bucket sizes of region {n}" for n in range(30)),
])


def test_the_same_file_read_five_times_counts_once_so_its_rare_fact_is_attached() -> None:
    # The model read notes.md five times before the compaction: five identical copies of one original.
    # Counted as five messages, "codename" would look common (5 of 15) and nothing would be attached.
    turns: list[tuple[str, str]] = [("user", "Read the notes and tidy the refill scheduler.")]
    for _ in range(5):
        turns += [("assistant", "read path=notes.md"), ("toolResult", NOTES)]
    turns += [("assistant", "Tidied the scheduler."), ("user", "Good; now the quota docs."),
              ("assistant", "Updated the quota docs."), ("user", "Thanks.")]
    attached = _ask(_branch(turns), "What is the release codename?")
    assert len(attached) == 1 and "Release codename: JUNIPER-FALLS" in attached[0]
