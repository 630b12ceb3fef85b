"""The newest tool result cut to fit keeps the lines the question names (issue 44, the third walk).

The walk: NOTES.md (1,026 lines) read on a 16k window was sent cut to its first 336 lines; the codename
decided at meeting 137 is on line 963, so the model never saw it, read again and again, and timed out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pi_compact.compaction.focus import Focus, scored_lines
from pi_compact.compaction.newest_fit import fit_newest_result
from pi_compact.compaction.tokens import estimate_tokens_chars4

ROUTINE = ("- Discussed moving logs to the new bucket.", "- Reviewed the on-call rota for the next two weeks.",
           "- Looked at the flaky upload test again; no decision.", "- Checked the disk usage of the build machines.")
ANSWER = "- Decided the release codename: COPPER-KITE."
TRAP = "- Ticket 137 in the tracker is about the logs bucket; it stays open."


def notes(meetings: int = 160) -> str:
    """Meeting notes in ``read``'s numbered form: routine lines, a trap at meeting 40, the answer at 137."""
    lines = ["# Team meeting notes", ""]
    for number in range(1, meetings + 1):
        lines += [f"## Meeting {number}", *(ROUTINE[(number + k) % len(ROUTINE)] for k in range(4))]
        lines += [TRAP] if number == 40 else [ANSWER] if number == 137 else []
        lines.append("")
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, 1))


def turn(question: str, output: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": question}], "timestamp": 1},
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read",
                                               "arguments": {"path": "NOTES.md"}}], "timestamp": 2},
            {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
             "content": [{"type": "text", "text": output}], "timestamp": 3}]


def cut_text(question: str, output: str, keep_tokens: int = 1_500) -> str:
    messages = turn(question, output)
    over = estimate_tokens_chars4(messages[2]) - keep_tokens
    fitted = fit_newest_result(messages, over, estimate_tokens_chars4)
    return str(fitted[2]["content"][0]["text"])


def test_a_number_counts_only_with_the_word_beside_it_in_the_question() -> None:
    focus = Focus.of("Read NOTES.md and tell me the release codename decided at meeting 137.")
    assert focus is not None and focus.phrases == ("meeting 137",)
    lines = notes().split("\n")
    found = {lines[i].split("\t", 1)[1] for i in scored_lines(focus, lines)}
    assert found == {"## Meeting 137", ANSWER}  # not line 137, not "Ticket 137", not every "## Meeting" heading


def test_a_question_of_routine_words_and_a_bare_number_names_nothing() -> None:
    assert Focus.of("Are you sure? Quote the line that says it.") is None
    assert Focus.of("What is on 137?") is None


def test_a_cut_read_keeps_the_lines_that_hold_the_questions_terms_with_their_line_numbers() -> None:
    cut = cut_text("Read NOTES.md and tell me the release codename decided at meeting 137.", notes())
    [numbered] = [line for line in notes().split("\n") if line.endswith(ANSWER)]
    assert numbered.lstrip().split("\t")[0] == "825" and numbered in cut  # the line with its number
    assert "## Meeting 137\n" in cut and TRAP not in cut
    assert cut.startswith("     1\t# Team meeting notes")  # the head as room allows
    assert re.search(r"\n\[… lines \d+–81\d not shown …\]\n", cut)  # by the file's line numbers
    # The note names the matched lines first, with leave to answer from them, and offers more reading after.
    note = cut[cut.index("[Cut to fit"):]
    assert re.search(r"lines 818–827, which hold words of the question", note)
    # A read is pointed at those lines, not past the first ones; the last sentence asks for the answer (a
    # small model does what the note's last sentence offers).
    assert "read NOTES.md with offset=818 and limit=10" in note and "for the lines after the first ones" not in note
    assert note.endswith("If lines 818–827 hold what the question asks, answer from them now.]")
    assert estimate_tokens_chars4({"role": "toolResult", "content": [{"type": "text", "text": cut}]}) <= 1_500


def test_a_cut_for_a_question_the_output_does_not_answer_keeps_only_the_head() -> None:
    cut = cut_text("What was said about the coffee budget?", notes())
    assert "not shown" not in cut and "hold words of the question" not in cut
    assert cut.startswith("     1\t# Team meeting notes")


def test_the_marker_of_lines_left_out_of_a_read_from_an_offset_names_the_files_line_numbers() -> None:
    numbered = notes().split("\n")
    cut = cut_text("Tell me the release codename decided at meeting 137.", "\n".join(numbered[600:]), 800)
    [marker] = re.findall(r"\[… lines [^\]]* not shown …\]", cut)
    first, last = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+", marker))
    assert 601 < first < last < 825 and "of this output" not in marker


def test_a_result_cut_to_fit_takes_no_more_than_the_share_it_is_given_however_much_room_is_left() -> None:
    # Issue 44's fourth walk: the read cut to the threshold was a 13,000-token request, five minutes of reading
    # on the embedded model. Room for 6,000 tokens, a share of 1,000: the cut keeps ~1,000, the answer's line first.
    messages = turn("Read NOTES.md and tell me the release codename decided at meeting 137.", notes())
    over = estimate_tokens_chars4(messages[2]) - 6_000
    fitted = fit_newest_result(messages, over, estimate_tokens_chars4, 1_000)
    size = estimate_tokens_chars4(fitted[2])
    assert 800 < size <= 1_000 and ANSWER in fitted[2]["content"][0]["text"]


FOLLOW_UP = "Are you sure? Quote the line of NOTES.md that says it."
QUESTION = "Read NOTES.md and tell me the release codename decided at meeting 137."


def _cut_after(earlier: list[dict[str, Any]], question: str) -> str:
    messages = [*earlier, *turn(question, notes())]
    over = estimate_tokens_chars4(messages[-1]) - 1_500
    return str(fit_newest_result(messages, over, estimate_tokens_chars4)[-1]["content"][0]["text"])


def test_a_follow_up_that_names_little_is_cut_for_the_question_it_follows_up() -> None:
    # Issue 44's fourth walk: "Are you sure? Quote the line" re-read NOTES.md, cut to its first lines only.
    earlier = [{"role": "user", "content": QUESTION, "timestamp": 0},
               {"role": "assistant", "content": [{"type": "text", "text": "COPPER-KITE."}], "timestamp": 0}]
    assert ANSWER in _cut_after(earlier, FOLLOW_UP)
    assert ANSWER not in _cut_after([], FOLLOW_UP)  # with no question before it, nothing to look for


def test_a_follow_up_finds_the_question_it_follows_up_in_the_summarys_kept_user_messages() -> None:
    summary = "## Goal\n- codename\n\n<user-messages>\n" + json.dumps(QUESTION) + "\n</user-messages>"
    earlier = [{"role": "compactionSummary", "summary": summary, "tokensBefore": 9_000, "timestamp": 0}]
    assert ANSWER in _cut_after(earlier, FOLLOW_UP)


def test_a_new_question_that_names_little_does_not_borrow_the_previous_ones_terms() -> None:
    earlier = [{"role": "user", "content": QUESTION, "timestamp": 0}]
    cut = _cut_after(earlier, "Now read NOTES.md again.")
    assert ANSWER not in cut and "hold words of the question" not in cut
