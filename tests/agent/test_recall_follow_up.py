"""Automatic recall for a follow-up question (issue 44, the third walk, step 4).

The walk: after the NOTES.md reads were compacted, "Are you sure? Quote the line of NOTES.md that says
it." named only NOTES.md, which the reads' results do not hold: recall attached the model's own call
``read path=NOTES.md offset=692``, and the model invented "release-1.0". A follow-up with few specific
terms now also uses the previous question's; the model's own tool calls are never the match; what is
attached are the lines of the stored output, with their line numbers; with no support, nothing.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_harness import SETTINGS, UNDER_THRESHOLD, make_model_harness, scripted_summary
from test_recall_numbers import CODENAME, notes_text

from pi_compact.agent.compaction.recall import RECALLED_INTRO, choose, wanted
from pi_compact.agent.tools import ToolContext, run_tool
from pi_compact.agent.tools.read import ReadTool
from pi_compact.llm.scripted import ScriptedCall, ScriptedReply

ASKED = "Read NOTES.md and tell me the release codename decided at meeting 137."
FOLLOW_UP = "Are you sure? Quote the line of NOTES.md that says it."


def _read(tmp_path: Path, text: str, **args: Any) -> str:
    (tmp_path / "NOTES.md").write_text(text)
    output = run_tool(ReadTool(), {"path": "NOTES.md", **args}, ToolContext(tmp_path))
    assert not output.is_error
    return output.text


def _entries(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a branch, all compacted but the last one, which the compaction keeps."""
    entries: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        entries.append({"type": "message", "id": f"e{index}", "parentId": entries[-1]["id"] if entries else None,
                        "message": {"timestamp": 0, **message}})
    kept = entries[-1]["id"]
    entries.append({"type": "compaction", "id": "c1", "parentId": kept, "firstKeptEntryId": kept,
                    "summary": "## Goal\n- find the release codename in NOTES.md", "tokensBefore": 0})
    return entries


def _turn_of_reads(tmp_path: Path, text: str, answer: str | None = None) -> list[dict[str, Any]]:
    """The walk's step 3: the question, a whole read, a read from an offset, the whole read again."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": ASKED}]}]
    for n, args in enumerate(({}, {"offset": 692}, {})):
        messages.append({"role": "assistant", "content": [
            {"type": "toolCall", "id": f"r{n}", "name": "read", "arguments": {"path": "NOTES.md", **args}}]})
        messages.append({"role": "toolResult", "toolCallId": f"r{n}", "toolName": "read", "isError": False,
                         "content": [{"type": "text", "text": _read(tmp_path, text, **args)}]})
    if answer is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "ok"}]})
    return messages


def _ask(branch: list[dict[str, Any]], question: str = FOLLOW_UP) -> list[Any]:
    live = [{"role": "compactionSummary", "summary": "## Goal\n- find the release codename in NOTES.md",
             "tokensBefore": 0, "timestamp": 0}, {"role": "user", "content": [{"type": "text", "text": "ok"}],
                                                 "timestamp": 0},
            {"role": "user", "content": [{"type": "text", "text": question}], "timestamp": 0}]
    return choose(branch, live, 1500, "chars4")


def test_a_follow_up_gets_the_stored_line_that_answers_the_previous_question_not_the_models_call(
    tmp_path: Path,
) -> None:
    excerpts = _ask(_entries(_turn_of_reads(tmp_path, notes_text())))
    assert excerpts and all(e.role == "toolResult" for e in excerpts)
    assert any(f"\t- Decided the release codename: {CODENAME}." in e.text for e in excerpts)
    assert not any("offset=" in e.text for e in excerpts)


def test_a_follow_up_does_not_get_the_models_own_earlier_claim_back(tmp_path: Path) -> None:
    claimed = "The release codename decided at meeting 137 is release-1.0."
    excerpts = _ask(_entries(_turn_of_reads(tmp_path, notes_text(), answer=claimed)))
    assert not any("release-1.0" in e.text for e in excerpts)
    assert any(CODENAME in e.text for e in excerpts)


def test_a_follow_up_whose_question_the_stored_output_does_not_answer_gets_nothing(tmp_path: Path) -> None:
    without = notes_text().replace(f"- Decided the release codename: {CODENAME}.\n", "")
    assert _ask(_entries(_turn_of_reads(tmp_path, without))) == []


def test_a_path_that_only_the_models_own_call_names_brings_back_no_call(tmp_path: Path) -> None:
    branch = _entries(_turn_of_reads(tmp_path, notes_text()))
    excerpts = _ask(branch, "What did the read of NOTES.md at offset 692 show?")
    assert not any(e.role == "assistant" for e in excerpts)


def test_in_a_session_the_follow_up_request_carries_the_stored_line_not_the_call(tmp_path: Path) -> None:
    # Step 3 of the walk (a whole read and a read from an offset, then an answer), compacted; then step 4.
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, auto_recall_tokens=1000))
    h = make_model_harness(tmp_path, settings=settings)
    (h.cwd / "NOTES.md").write_text(notes_text())
    h.model.enqueue(ScriptedReply(tool_calls=(ScriptedCall("read", {"path": "NOTES.md", "limit": 400}),),
                                  prompt_tokens=UNDER_THRESHOLD),
                    ScriptedReply(tool_calls=(ScriptedCall("read", {"path": "NOTES.md", "offset": 692}),),
                                  prompt_tokens=UNDER_THRESHOLD),
                    ScriptedReply(text="I could not find it.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt(ASKED)
    h.model.enqueue(scripted_summary())
    assert h.session.compact() is not None
    h.model.enqueue(ScriptedReply(text="- Decided the release codename: COPPER-KITE.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt(FOLLOW_UP)
    attached = "".join(b.get("text", "") for b in h.agent_requests()[-1].messages[-1]["content"])
    assert attached.startswith(RECALLED_INTRO)
    assert f"\t- Decided the release codename: {CODENAME}." in attached and "offset=" not in attached


def test_a_follow_up_that_names_something_new_keeps_its_own_question() -> None:
    def live(text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}]

    same = wanted(live(FOLLOW_UP), ASKED)
    assert same is not None and same.borrowed and "codenam" in same.stems
    new = wanted(live("Can you confirm it for calc.py?"), ASKED)
    assert new is not None and not new.borrowed and "calc.py" in new.exact and "codenam" not in new.stems
