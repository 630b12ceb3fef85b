"""The NOTES.md flow of issue 44's third walk on the scripted server: the read is too big for the window,
goes out cut, overflows, and is retried cut smaller; every request the model gets carries the line that
answers the question (and its heading), not only the file's first lines.

The walk (16k window): the read was cut to its head, line 963 ("Decided the release codename") was never
in a request, and the model re-read the file until the step timed out.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agent_harness import SETTINGS, WINDOW, _system_of, make_harness, summary_reply
from scripted_server import Reply, ScriptedServer, ToolCallReply, error_reply

from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.settings import TokenEstimator

ROUTINE = ("- Discussed moving logs to the new bucket.", "- Reviewed the on-call rota for the next two weeks.",
           "- Looked at the flaky upload test again; no decision.", "- Checked the disk usage of the build machines.",
           "- Agreed to keep the nightly build green before merging.")
ANSWER = "- Decided the release codename: COPPER-KITE."
QUESTION = "Read NOTES.md and tell me the release codename decided at meeting 137."


def _notes() -> str:
    """~40k characters of meetings: "137" as a ticket at meeting 40 and as a line number, the answer late."""
    lines = ["# Team meeting notes", ""]
    for number in range(1, 170):
        lines += [f"## Meeting {number}", *(ROUTINE[(number + k) % len(ROUTINE)] for k in range(5))]
        lines += ["- Ticket 137 in the tracker is about the logs bucket; it stays open."] if number == 40 else []
        lines += [ANSWER] if number == 137 else []
        lines.append("")
    return "\n".join(lines) + "\n"


def _newest_tool_text(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "tool"][-1]["content"])


def test_every_request_after_a_read_too_big_for_the_window_carries_the_line_that_answers_the_question(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    scripted_server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    h = make_harness(scripted_server, tmp_path, settings=SETTINGS)
    notes = _notes()
    assert len(notes) > 38_000 and notes.split("\n").index(ANSWER) > 900
    (h.cwd / "NOTES.md").write_text(notes)
    overflow = error_reply(400, f"request (13500 tokens) exceeds the available context size ({WINDOW} tokens), "
                                "try increasing it")
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=300),
                            overflow, Reply(text="COPPER-KITE", prompt_tokens=7_000))
    h.session.prompt(QUESTION)
    first, retried = (_newest_tool_text(r) for r in h.agent_requests()[1:3])
    line = f"{notes.split(chr(10)).index(ANSWER) + 1}\t{ANSWER}"  # with its line number
    for sent in (first, retried):
        assert "Cut to fit the context window" in sent
        assert line in sent and "## Meeting 137\n" in sent
        assert "Ticket 137" not in sent.split("not shown …]", 1)[1]  # not matched: only in the head, if at all
    assert len(retried) < len(first)
    assert h.session.messages[-1]["content"][0]["text"] == "COPPER-KITE"


def _digits_cost(body: dict[str, Any]) -> int:
    """A tokenizer that reads numbers a digit a token (as llama.cpp's did the walk's line-number column):
    far more than chars/4 on a numbered read."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return len(text) // 4 + sum(c.isdigit() for c in text)


@pytest.mark.parametrize("estimator", ["chars4", "auto"])
def test_after_an_overflow_the_servers_count_corrects_the_estimate_so_the_retry_fits_the_enforcing_server(
    scripted_server: ScriptedServer, tmp_path: Path, estimator: TokenEstimator,
) -> None:
    refused: list[int] = []

    def enforce(body: dict[str, Any]) -> Reply | None:
        if _system_of(body) == SYSTEM_PROMPT:
            return summary_reply()
        if (counted := _digits_cost(body)) > WINDOW:
            refused.append(counted)
            return error_reply(400, f"request ({counted} tokens) exceeds the available context size ({WINDOW} "
                                    "tokens), try increasing it")
        return None

    scripted_server.route = enforce
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, token_estimator=estimator))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    # ~6.5k tokens by chars/4 (under the 8k threshold, sent whole), ~11k as the server counts it.
    (h.cwd / "NOTES.md").write_text(_notes()[:24_000])
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=300),
                            Reply(text="COPPER-KITE", prompt_tokens=7_000))
    h.session.prompt(QUESTION)
    assert len(refused) == 1  # the read sent whole; the retry, cut by what that count proved, is accepted
    assert h.session.messages[-1]["content"][0]["text"] == "COPPER-KITE"
