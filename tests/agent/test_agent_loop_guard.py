"""Beyond pi: a compaction that cannot get under the threshold says why, and does not loop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import (
    SETTINGS,
    assert_compactions_paired,
    make_harness,
    padded,
    summary_reply,
)
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.events import Notice


def test_futile_compaction_names_the_big_message_and_is_not_repeated_every_tool_turn(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # keepRecentTokens 7000 of a 10 000 window with 2 000 reserved: a 9 000-token prompt stays in the
    # kept tail, so compacting cannot get the context under the 8 000 threshold.
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, keep_recent_tokens=7_000))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    # An early turn big enough that summarizing it frees something (else nothing would be written).
    scripted_server.enqueue(Reply(text="early answer " + padded("z", 400), prompt_tokens=500))
    h.session.prompt("EARLY-QUESTION " + padded("x", 50))
    # (The steps list the directory under two spellings in turn: four identical calls in a row stop the loop.)
    def step(path: str) -> Reply:
        return Reply(tool_calls=(ToolCallReply("ls", {"path": path}),), prompt_tokens=9_300)

    # The big prompt takes the context past the threshold: it is compacted before the prompt is sent (issue 43).
    scripted_server.enqueue(
        summary_reply(),
        Reply(tool_calls=(ToolCallReply("ls", {"path": "."}),), prompt_tokens=9_200),
        step("./"), step("."), step("./"),
        Reply(text="DONE", prompt_tokens=9_400),
    )
    final = h.session.prompt("BIG-PROMPT " + padded("y", 9_000))

    assert final is not None and final["content"] == [{"type": "text", "text": "DONE"}]
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result is not None) for s, e in pairs] == [("threshold", True)]
    assert len(h.summarizer_requests()) == 1
    warnings = [e for e in h.events if isinstance(e, Notice) and e.level == "warning"]
    assert len(warnings) == 1
    assert "could not bring the context under the auto-compaction threshold" in warnings[0].text
    assert "largest kept message is a user" in warnings[0].text
    # The tool turns after it find nothing to compact (the big prompt starts the kept part): no model
    # call, no notice, and no reason to switch automatic compaction off (issue 35.2: the next prompt
    # makes the big one older, and compaction must still be on then).
    assert h.session.auto_compact
    assert not h.session.compaction_stopped
    assert scripted_server.pending == 0
