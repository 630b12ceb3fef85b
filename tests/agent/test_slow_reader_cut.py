"""On a model that reads prompts slowly (llama.cpp on the CPU, which reports its reading rate), the turn's
newest tool result goes out cut to a fifth of the window whatever the threshold, and no compaction is run
for it when that cut is what brings the context under the threshold (issue 44, item 3).

Issue 44's fifth walk (16k window, the embedded model): the model read 800 lines of NOTES.md at an offset,
under the threshold by the estimate, and the server spent more than seven minutes reading the 14,969-token
request at 25-50 tokens a second; before that a 64 s summary was written for a read that then went out cut.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_harness import INFO, SETTINGS, WINDOW, Harness, _system_of, padded, summary_reply
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.events import CompactionEnd, SessionEvent
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.compaction.newest_fit import NEWEST_SHARE
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.session.store import SessionStore

ANSWER = "- Decided the release codename: COPPER-KITE."
QUESTION = "Read NOTES.md and tell me the release codename decided at meeting 137."
CUT_NOTE = "Cut to fit the context window"


def _notes(meetings: int) -> str:
    lines = ["# Team meeting notes", ""]
    for number in range(1, meetings + 1):
        lines += [f"## Meeting {number}", "- Discussed moving logs to the new bucket.",
                  "- Reviewed the on-call rota for the next two weeks."]
        lines += [ANSWER] if number == meetings - 5 else []
    return "\n".join(lines) + "\n"


def _read_call_read_slowly(prompt_tokens: int, path: str = "NOTES.md") -> Reply:
    """A reply that calls ``read NOTES.md`` after reporting, as llama.cpp does, that it read its prompt at
    100 tokens a second."""
    progress = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}],
                "prompt_progress": {"total": prompt_tokens, "cache": 0, "processed": prompt_tokens,
                                    "time_ms": prompt_tokens * 10}}
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"path": path})}}
    calls = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}}
    return Reply(raw_events=(json.dumps(progress), json.dumps(calls), json.dumps(end)))


def _slow_reader_harness(server: ScriptedServer, tmp_path: Path) -> Harness:
    server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    cwd = tmp_path / "work"
    cwd.mkdir()
    model = OpenAICompatModel(INFO, api_base=server.base_url, api_key="test", retry=SETTINGS.retry,
                              prompt_progress=True)
    events: list[SessionEvent] = []
    session = AgentSession(store=SessionStore.create(tmp_path / "s.jsonl", str(cwd), 1_700_000_000_000),
                           model=model, settings=SETTINGS, tools=default_tools(), system_prompt="You help.",
                           cwd=cwd, emit=events.append)
    return Harness(session, server, tmp_path / "s.jsonl", cwd, events)


def _tool_text(request: dict[str, object], which: int = -1) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "tool"][which]["content"])


def test_a_slow_readers_newest_result_bigger_than_a_fifth_of_the_window_goes_out_cut_under_the_threshold(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _slow_reader_harness(scripted_server, tmp_path)
    notes = _notes(150)  # ~4,100 tokens by chars/4 (~4,900 with read's line numbers): under the threshold
    assert 3_500 < len(notes) / 4 < 4_500
    (h.cwd / "NOTES.md").write_text(notes)
    scripted_server.enqueue(_read_call_read_slowly(300), Reply(text="COPPER-KITE.", prompt_tokens=2_400))
    h.session.prompt(QUESTION)
    sent = _tool_text(h.agent_requests()[1])
    assert CUT_NOTE in sent and ANSWER in sent  # cut, with the line the question names
    assert len(sent) / 4 <= NEWEST_SHARE * WINDOW * 1.1
    assert h.session.messages[-1]["content"][0]["text"] == "COPPER-KITE."


def test_no_compaction_is_run_for_a_slow_readers_newest_result_that_the_cut_brings_under_the_threshold(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _slow_reader_harness(scripted_server, tmp_path)
    (h.cwd / "NOTES.md").write_text(_notes(190))  # ~6,300 tokens: with the earlier turn, over the threshold
    scripted_server.enqueue(Reply(text=padded("EARLIER-ANSWER", 1_500), prompt_tokens=1_700),
                            _read_call_read_slowly(3_300), Reply(text="COPPER-KITE.", prompt_tokens=5_000))
    h.session.prompt(padded("EARLIER-QUESTION", 1_500))
    h.session.prompt(QUESTION)
    assert not [e for e in h.events if isinstance(e, CompactionEnd)]
    assert not [r for r in scripted_server.requests if _system_of(r) == SYSTEM_PROMPT]  # no summary asked
    assert CUT_NOTE in _tool_text(h.agent_requests()[-1])
    assert h.session.messages[-1]["content"][0]["text"] == "COPPER-KITE."


def test_a_slow_readers_result_sent_cut_stays_cut_when_the_model_calls_another_tool_in_the_turn(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # Issue 44's sixth walk: after the cut read the model called `recall`; the read, no longer the newest
    # result, went out whole and the server refused 20,600 tokens.
    h = _slow_reader_harness(scripted_server, tmp_path)
    (h.cwd / "NOTES.md").write_text(_notes(150))
    (h.cwd / "SMALL.md").write_text("codename list is in NOTES.md\n")
    scripted_server.enqueue(_read_call_read_slowly(300), _read_call_read_slowly(2_400, "SMALL.md"),
                            Reply(text="COPPER-KITE.", prompt_tokens=2_500))
    h.session.prompt(QUESTION)
    first_cut, then = _tool_text(h.agent_requests()[1]), _tool_text(h.agent_requests()[2], 0)
    assert CUT_NOTE in then and then == first_cut  # the same cut, so the prompt's prefix is the same too
    assert h.session.messages[-1]["content"][0]["text"] == "COPPER-KITE."


def test_a_result_sent_cut_is_carried_the_same_in_the_next_prompts_request(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # Issue 44's seventh walk: the answer was right, then "Are you sure? Quote the line" sent the read whole
    # (no longer the turn's newest result) and the server refused 19,694 tokens.
    h = _slow_reader_harness(scripted_server, tmp_path)
    (h.cwd / "NOTES.md").write_text(_notes(150))
    scripted_server.enqueue(_read_call_read_slowly(300), Reply(text="COPPER-KITE.", prompt_tokens=2_400),
                            Reply(text="- Decided the release codename: COPPER-KITE.", prompt_tokens=2_500))
    h.session.prompt(QUESTION)
    h.session.prompt("Are you sure? Quote the line of NOTES.md that says it.")
    first, then = (_tool_text(r, 0) for r in h.agent_requests()[1:3])
    assert CUT_NOTE in then and then == first
    assert h.session.context_usage().tokens < 2_500 + 200  # the figure counts it as sent
