"""Acceptance: 30 facts planted early survive three automatic compactions through ``recall``.

A real AgentSession on a real LiteLLMModel against the scripted server: the facts are summarized
away (the scripted summary does not mention them), then the scripted model calls ``recall`` once per
fact and every fact must come back verbatim in the tool results sent to the model, each result
within ``compaction.recallMaxTokens``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_harness import KEEP_RECENT, RESERVE, make_harness, padded, summary_reply
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.tools.recall import RECALL_HINT, RecallTool
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.llm.protocol import ModelInfo
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings, Settings

WINDOW = 100_000
OVER = WINDOW - RESERVE + 500  # prompt_tokens that cross the auto-compaction threshold
SETTINGS = Settings(compaction=CompactionSettings(reserve_tokens=RESERVE, keep_recent_tokens=KEEP_RECENT,
                                                  token_estimator="chars4"))
CAP = SETTINGS.compaction.recall_max_tokens


def fact(n: int) -> str:
    return f"Fact {n}: the password of vault needle{n:02d} is {n * 7919 % 100_000:05d}-{chr(65 + n % 26)}q."


def text_of_openai(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def test_thirty_planted_facts_come_back_verbatim_after_three_compactions(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    store = SessionStore.create(tmp_path / "session.jsonl", str(tmp_path), 1_700_000_000_000)
    info = ModelInfo("openai/scripted", "openai", WINDOW, None)
    h = make_harness(scripted_server, tmp_path, settings=SETTINGS, store=store, info=info,
                     extra_tools=[RecallTool.for_settings(store, SETTINGS.compaction)])
    for n in range(30):  # the facts are the assistant's: what the user typed stays in the summary (issue 41)
        scripted_server.enqueue(Reply(text=fact(n), prompt_tokens=1_000))
        h.session.prompt(f"What is fact {n}?")
    for round_ in range(3):  # each turn crosses the threshold and is followed by an automatic compaction
        scripted_server.enqueue(Reply(text=padded(f"WORK-{round_}"), prompt_tokens=OVER), summary_reply())
        h.session.prompt(padded(f"Next task {round_}"))
        for quiet in range(2):  # turns under the threshold: the loop guard sees each compaction helped
            scripted_server.enqueue(Reply(text=f"Ok {round_}.{quiet}.", prompt_tokens=1_000))
            h.session.prompt(f"Small step {round_}.{quiet}")
    assert [e["type"] for e in h.entries()].count("compaction") == 3
    before = json.dumps(h.agent_requests()[-1]["messages"])
    assert not any(f"needle{n:02d}" in before for n in range(30))  # the facts left the context

    calls = tuple(ToolCallReply("recall", {"query": f"needle{n:02d} password"}, id=f"r{n}") for n in range(30))
    scripted_server.enqueue(Reply(tool_calls=calls, prompt_tokens=2_000), Reply(text="Recalled.", prompt_tokens=9_000))
    h.session.prompt("List the thirty facts from the start of the session.")

    sent = h.agent_requests()[-1]["messages"]
    results = {m["tool_call_id"]: text_of_openai(m["content"]) for m in sent if m["role"] == "tool"}
    assert sorted(results) == sorted(f"r{n}" for n in range(30))
    found = [n for n in range(30) if fact(n) in results[f"r{n}"]]
    assert found == list(range(30))
    assert max(estimate_text_tokens(text, "chars4") for text in results.values()) <= CAP
    summary = next(m for m in sent if m["role"] == "user")
    assert text_of_openai(summary["content"]).endswith(RECALL_HINT)
    assert any(tool["function"]["name"] == "recall" for tool in h.agent_requests()[-1]["tools"])

