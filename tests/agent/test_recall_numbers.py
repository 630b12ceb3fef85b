"""Automatic recall never feeds the model a wrong fact (issue 44, item 1): a line number is not a match,
a number counts only beside a word of the question, and an excerpt the question's terms do not really
support is not attached.

The case from the issue: NOTES.md (~40k characters) has a release codename under meeting 137; the model
read it (``read`` prints a line-number column), the read was compacted, and the user asked for "the
codename decided at meeting 137". Recall matched ``137`` to line 137 of the read output (a heading of
meeting 20) and attached the lines around it; the model answered from them, wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_compact.agent.compaction.recall import choose
from pi_compact.agent.tools import ToolContext, run_tool
from pi_compact.agent.tools.read import ReadTool

CODENAME = "COPPER-KITE"
QUESTION = "What was the release codename decided at meeting 137?"
_ROUTINE = (
    "- Discussed moving logs to the new bucket.",
    "- Reviewed the on-call rota for the next two weeks.",
    "- Agreed to keep the nightly build green before merging.",
    "- Looked at the flaky upload test again; no decision.",
    "- Went through open questions from the support queue.",
    "- Checked the disk usage of the build machines.",
)


def notes_text() -> str:
    """About 40k characters of meeting notes, seven lines a meeting (line 137 is the heading of meeting
    20, as in the issue); meeting 137 decides the release codename."""
    lines = ["# Team meeting notes", "", "Kept by whoever chairs; newest last.", ""][:3]
    for number in range(1, 141):
        lines.append(f"## Meeting {number}")
        lines += [_ROUTINE[(number + k) % len(_ROUTINE)] for k in range(5)]
        if number == 137:
            lines.append(f"- Decided the release codename: {CODENAME}.")
        lines.append("")
    return "\n".join(lines)


def read_output(tmp_path: Path, **args: Any) -> str:
    """What the model saw: the real ``read`` tool's output, line-number column and all."""
    (tmp_path / "NOTES.md").write_text(notes_text())
    output = run_tool(ReadTool(), {"path": "NOTES.md", **args}, ToolContext(tmp_path))
    assert not output.is_error
    return output.text


def _message(role: str, text: str) -> dict[str, Any]:
    if role == "toolResult":
        return {"role": role, "toolCallId": "r1", "toolName": "read", "content": [{"type": "text", "text": text}],
                "isError": False, "timestamp": 0}
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 0}


def _branch(read: str) -> list[dict[str, Any]]:
    """The notes read, then more work, all compacted; a kept user message after."""
    turns = [("user", "Read NOTES.md and tell me what the team worked on."), ("assistant", "read path=NOTES.md"),
             ("toolResult", read), ("assistant", "The meetings cover logs, the on-call rota and the nightly build."),
             ("user", "Fix the failing test in calc.py."), ("assistant", "Fixed add(); 2 passed."),
             ("user", "Thanks.")]
    entries: list[dict[str, Any]] = []
    for index, (role, text) in enumerate(turns):
        entries.append({"type": "message", "id": f"e{index}", "parentId": entries[-1]["id"] if entries else None,
                        "message": _message(role, text)})
    kept = entries[-1]["id"]
    entries.append({"type": "compaction", "id": "c1", "parentId": kept, "firstKeptEntryId": kept,
                    "summary": "## Goal\n- notes and calc work", "tokensBefore": 0})
    return entries


def _ask(read: str, question: str = QUESTION) -> list[str]:
    live = [{"role": "compactionSummary", "summary": "## Goal\n- notes and calc work", "tokensBefore": 0,
             "timestamp": 0}, _message("user", "Thanks."), _message("user", question)]
    return [e.text for e in choose(_branch(read), live, 1500, "chars4")]


def test_the_notes_are_about_forty_thousand_characters_and_line_137_is_another_meeting(tmp_path: Path) -> None:
    text = read_output(tmp_path)
    assert 35_000 < len(notes_text()) < 45_000
    line_137 = next(line for line in text.split("\n") if line.lstrip().startswith("137\t"))
    assert "## Meeting" in line_137 and "Meeting 137" not in line_137


def test_a_read_without_meeting_137_gets_nothing_attached_for_it(tmp_path: Path) -> None:
    # The read stopped before meeting 137: only line 137 (a heading of another meeting) holds "137".
    attached = _ask(read_output(tmp_path, limit=400))
    assert attached == []


def test_a_whole_read_gets_the_lines_of_meeting_137_with_the_codename(tmp_path: Path) -> None:
    attached = _ask(read_output(tmp_path))
    assert attached, "the codename is in the compacted read: it should come back"
    assert all("## Meeting 137" in text and CODENAME in text for text in attached)


def test_a_number_alone_in_a_line_without_the_questions_words_is_no_match(tmp_path: Path) -> None:
    # "137" appears in prose with none of the question's other words on its line: no evidence.
    notes = "\n".join(["## Meeting 12", "- Budget line 137 approved.", *(["- routine item"] * 20),
                       "## Meeting 13", "- Nothing new."])
    assert _ask(notes, "What codename was decided at meeting 137?") == []
