"""Tool-result clearing at its edges: the threshold it shares with compaction, a resumed session's count,
replies that failed, and what a summary on a cleared context may reuse (issue 32's review).

The session runs on the in-process scripted model; its file is written first with ``builders``, so the
sizes are exact (chars/4) and the usage the replies recorded is what the context is anchored on.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_harness import SETTINGS, make_model_harness, scripted_summary
from builders import assistant, sized, tool_call, tool_result, usage, user

from pi_compact.agent.events import CompactionStart, Notice
from pi_compact.compaction.clearing import CLEARED_TYPE
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedReply
from pi_compact.session.store import SessionStore

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
T0 = 1_700_000_000_000


def clearing_on(**compaction: Any) -> Any:
    return replace(SETTINGS, compaction=replace(SETTINGS.compaction, clear_tool_results=True, **compaction))


def read_session(path: Path, reads: int, tokens: int, last_input: int) -> SessionStore:
    """A file where the model read ``reads`` files of ``tokens`` each, one per reply, then answered; the
    answer's usage says the provider counted ``last_input`` tokens of prompt."""
    store = SessionStore.create(path, str(path.parent), T0)
    t = T0 + 10
    store.append_message(user("Read every file.", timestamp=t), t)
    for i in range(reads):
        t += 10
        store.append_message(assistant(tool_calls=[tool_call("read", {"path": f"f{i}.txt"}, f"c{i}")],
                                       usage=usage(input=100 + i * tokens), stop_reason="toolUse", timestamp=t), t)
        t += 10
        store.append_message(tool_result(f"FILE-{i} " + sized(tokens), tool_call_id=f"c{i}", tool_name="read",
                                         timestamp=t), t)
    t += 10
    store.append_message(assistant("All read.", usage=usage(input=last_input), timestamp=t), t)
    return store


def cleared_in(path: Path) -> list[str]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [item["entryId"] for e in lines if e.get("customType") == CLEARED_TYPE for item in e["data"]["cleared"]]


def test_clearing_starts_where_compaction_starts_when_the_thinking_budget_lowers_the_threshold(
        tmp_path: Path) -> None:
    # Thinking high on a 200k Claude leaves 21,408 tokens of answer room: compaction starts past 178,592,
    # not past 198,000 (window less reserveTokens). A context of 185,000 must clear first, not compact.
    store = read_session(tmp_path / "session.jsonl", reads=6, tokens=30_000, last_input=185_000)
    h = make_model_harness(tmp_path, "Done.", scripted_summary(), info=SONNET, thinking="high",
                           settings=clearing_on(), store=store)
    assert h.session.context_usage().threshold == 178_592
    h.session.prompt("Go on.")
    assert [e for e in h.events if isinstance(e, CompactionStart)] == []
    assert [e.text for e in h.events if isinstance(e, Notice) and e.text.startswith("Cleared ")] != []
    assert len(cleared_in(h.path)) == 6  # each read (30k) crosses the protected newest 20k: all may go
    assert h.session.context_usage().tokens <= 178_592


def test_a_resumed_session_counts_results_cleared_after_the_last_reply_as_the_run_did(tmp_path: Path) -> None:
    # The reply measures 9,200 tokens (threshold 8,000): the run clears after it, so that reply's usage still
    # counts the originals. A resume must subtract them as the run did, and not compact on the next prompt.
    store = read_session(tmp_path / "session.jsonl", reads=6, tokens=1_500, last_input=100)
    h = make_model_harness(tmp_path, ScriptedReply(text="They are read.", prompt_tokens=9_200),
                           settings=clearing_on(), store=store)
    h.session.prompt("Are they read?")
    assert len(cleared_in(h.path)) >= 4
    figure = h.session.context_usage().tokens
    assert figure < 8_000
    h.session.close()
    again = make_model_harness(tmp_path / "again", "Yes.", scripted_summary(), settings=clearing_on(),
                               store=SessionStore.open(h.path, str(h.cwd), T0 + 100_000))
    assert again.session.context_usage().tokens == figure
    again.session.prompt("Anything else?")
    assert [e for e in again.events if isinstance(e, CompactionStart)] == []


def test_a_read_the_model_never_saw_because_its_reply_failed_is_not_cleared(tmp_path: Path) -> None:
    store = read_session(tmp_path / "session.jsonl", reads=3, tokens=1_500, last_input=4_800)
    t = T0 + 1_000
    store.append_message(assistant(tool_calls=[tool_call("read", {"path": "big.txt"}, "big")], stop_reason="toolUse",
                                   usage=usage(input=4_900), timestamp=t), t)
    store.append_message(tool_result("BIG-FILE " + sized(5_000), tool_call_id="big", tool_name="read",
                                     timestamp=t + 10), t + 10)
    store.append_message(assistant(stop_reason="error", timestamp=t + 20), t + 20)
    h = make_model_harness(tmp_path, "Read it now.", scripted_summary(), settings=clearing_on(), store=store)
    h.session.prompt("Try again.")
    assert len(cleared_in(h.path)) == 3  # the three reads the model answered
    sent = json.dumps(h.agent_requests()[-1].messages)
    assert "BIG-FILE" in sent and "FILE-0 " not in sent
    assert [e for e in h.events if isinstance(e, CompactionStart)] == []


def test_uncompact_measures_the_restored_context_against_the_same_threshold(tmp_path: Path) -> None:
    store = read_session(tmp_path / "session.jsonl", reads=3, tokens=1_500, last_input=4_800)
    h = make_model_harness(tmp_path, scripted_summary(), info=SONNET, thinking="high", settings=clearing_on(),
                           store=store)
    assert h.session.compact() is not None
    outcome = h.session.uncompact()
    assert outcome.threshold == h.session.context_usage().threshold == 178_592
