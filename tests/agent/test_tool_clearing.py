"""Tool-result clearing in a running session: old reads leave the request, never the file.

The scripted server counts each request's prompt as a tokenizer would (``count_tokens``), so the usage
the session anchors on is what was really sent. Window 10,000 and reserve 2,000: the threshold is 8,000;
clearing's defaults scale to it (2,000 tokens of tool output protected, steps of at least 1,000).
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_harness import SETTINGS, SUMMARY, Harness, make_harness
from pi_session import pi_view
from rich.console import Console
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.events import CompactionStart, Notice
from pi_compact.agent.tools import ToolContext, run_tool
from pi_compact.agent.tools.recall import RecallTool
from pi_compact.compaction.clearing import CLEARED_TYPE
from pi_compact.session.pins import pin_fields
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings
from pi_compact.ui.status import context_report, gather_status

FILES = 6
FILE_TOKENS = 1500


def file_text(i: int) -> str:
    lines = [f"line {n} of file {i}: alpha beta gamma" for n in range(150)]
    lines[77] = f"deploy port of file {i}: {54300 + i}"
    return f"FILE-{i}-START\n" + "\n".join(lines)


def with_clearing(enabled: bool) -> Settings:
    return replace(SETTINGS, compaction=replace(SETTINGS.compaction, clear_tool_results=enabled))


def read_loop(h: Harness, files: int = FILES) -> None:
    """One prompt: the model reads ``files`` files one per reply, then answers."""
    for i in range(files):
        (h.cwd / f"f{i}.txt").write_text(file_text(i), encoding="utf-8")
    h.server.enqueue(*(Reply(tool_calls=(ToolCallReply("read", {"path": f"f{i}.txt"}, f"call-{i}"),),
                             count_tokens=True) for i in range(files)),
                     Reply(text="All files read.", count_tokens=True))
    # A summary request (it offers no tools) gets a summary, whenever a compaction asks for one.
    h.server.route = lambda body: None if body.get("tools") else Reply(text=SUMMARY, count_tokens=True)
    h.session.prompt("Read every file.")


def sent_messages(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def results_in_file(h: Harness) -> dict[str, str]:
    """Tool call id -> the result's text, as the session file holds it."""
    out = {}
    for entry in h.entries():
        message = entry.get("message") or {}
        if message.get("role") == "toolResult":
            out[message["toolCallId"]] = "".join(b.get("text", "") for b in message["content"])
    return out


def cleared_ids(h: Harness) -> list[str]:
    return [item["entryId"] for e in h.entries() if e.get("customType") == CLEARED_TYPE
            for item in e["data"]["cleared"]]


def test_a_loop_that_would_compact_without_clearing_does_not_compact_with_it(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    off = make_harness(scripted_server, tmp_path / "off", settings=with_clearing(False))
    read_loop(off)
    assert len([e for e in off.events if isinstance(e, CompactionStart)]) >= 1

    other = ScriptedServer().start()
    try:
        on = make_harness(other, tmp_path / "on", settings=with_clearing(True))
        read_loop(on)
    finally:
        other.stop()
    assert [e for e in on.events if isinstance(e, CompactionStart)] == []
    notices = [e.text for e in on.events if isinstance(e, Notice) and e.text.startswith("Cleared ")]
    assert len(notices) == 1 and "old tool results" in notices[0]
    assert on.session.context_usage().tokens <= on.session.context_usage().threshold


def test_old_results_are_stubs_in_the_request_and_whole_in_the_file(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    last = sent_messages(h.agent_requests()[-1])
    assert "FILE-0-START" not in last and "FILE-5-START" in last  # the oldest cleared, the newest kept
    assert "Tool result cleared from the context" in last
    assert results_in_file(h) == {f"call-{i}": h.session.messages[2 + 2 * i]["content"][0]["text"]
                                  for i in range(FILES)}
    assert all(f"FILE-{i}-START" in results_in_file(h)[f"call-{i}"] and f"line 149 of file {i}:" in
               results_in_file(h)[f"call-{i}"] for i in range(FILES))


def test_the_newest_results_are_never_cleared(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    for request in h.agent_requests():
        sent = sent_messages(request)
        newest = max((i for i in range(FILES) if f"call-{i}" in sent), default=None)
        if newest is not None:
            assert f"FILE-{newest}-START" in sent  # a result the model has not read yet goes in whole


def test_the_request_prefix_is_byte_identical_between_requests_with_no_new_clearing(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    requests = h.agent_requests()
    cleared_at = next(i for i, r in enumerate(requests) if "Tool result cleared" in sent_messages(r))
    assert cleared_at < len(requests) - 1  # there are requests after the step to compare
    for before, after in zip(requests[cleared_at:-1], requests[cleared_at + 1:], strict=True):
        prefix = before["messages"]
        assert after["messages"][: len(prefix)] == prefix
        assert json.dumps(after["messages"][: len(prefix)]) == json.dumps(prefix)


def test_a_cleared_result_comes_back_whole_through_recall(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    first = cleared_ids(h)[0]
    out = run_tool(RecallTool(h.session.store, 10_000), {"entry_id": first}, ToolContext(h.cwd))
    assert not out.is_error and out.text.endswith(results_in_file(h)["call-0"])


def test_a_resumed_session_clears_the_same_results_in_the_same_words(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    before = h.session.sent_messages
    h.session.close()
    store = SessionStore.open(h.path, str(h.cwd), 1_700_000_100_000)
    again = make_harness(scripted_server, tmp_path / "again", settings=with_clearing(True), store=store)
    assert again.session.sent_messages == before


def test_a_pinned_result_is_never_cleared(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    # Read two files, pin the first result, then read on until a step clears.
    for i in range(2):
        (h.cwd / f"p{i}.txt").write_text(file_text(100 + i), encoding="utf-8")
    h.server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "p0.txt"}, "pin-0"),), count_tokens=True),
                     Reply(text="read it", count_tokens=True))
    h.session.prompt("Read p0.")
    pinned = next(e["id"] for e in h.entries() if (e.get("message") or {}).get("toolCallId") == "pin-0")
    h.session.store.append(pin_fields("the p0 result", pinned), 1_700_000_000_500)
    read_loop(h)
    assert cleared_ids(h) and pinned not in cleared_ids(h)
    assert "FILE-100-START" in sent_messages(h.agent_requests()[-1])


def test_a_cleared_result_comes_back_whole_through_uncompact(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    stubs_before = h.session.sent_messages
    assert h.session.compact() is not None
    assert not any("FILE-0-START" in json.dumps(m) for m in h.session.messages)
    # The restored context, measured as the request carries it (its cleared results as stubs), fits.
    outcome = h.session.uncompact()
    assert outcome.tokens < 8_000 and not outcome.over_threshold
    restored = [m for m in h.session.messages if m.get("role") == "toolResult" and m["toolCallId"] == "call-0"]
    assert [m["content"][0]["text"] for m in restored] == [results_in_file(h)["call-0"]]
    assert h.session.sent_messages == stubs_before  # and the request carries the same stub as before


def _conversation(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Role and content of each message (usage and times differ between two runs; the words may not)."""
    return [(m["role"], json.dumps(m.get("content"), sort_keys=True)) for m in messages]


def test_pi_builds_the_same_context_from_a_session_written_with_clearing_as_without(tmp_path: Path) -> None:
    views = {}
    for enabled in (True, False):
        server = ScriptedServer().start()
        try:
            # Automatic compaction off, so the run without clearing does not compact either: the files
            # then differ only by what clearing wrote.
            h = make_harness(server, tmp_path / str(enabled), settings=with_clearing(enabled), auto_compact=False)
            read_loop(h)
        finally:
            server.stop()
        assert bool(cleared_ids(h)) is enabled
        views[enabled] = pi_view(h.path, tmp_path / f"home-{enabled}")
        ours = [dict(m) for m in SessionStore.open(h.path, str(h.cwd), 0).context().messages]
        assert _conversation(ours) == _conversation(views[enabled]["messages"])
    assert _conversation(views[True]["messages"]) == _conversation(views[False]["messages"])
    assert "custom" in views[True]["types"] and "custom" not in views[False]["types"]


def test_the_status_line_and_context_show_the_cleared_tool_output(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    count, tokens = h.session.cleared_tool_output()
    assert count == len(cleared_ids(h)) and tokens > 3000
    assert gather_status(h.session, "m").cleared == tokens
    console = Console(file=io.StringIO(), width=400)
    console.print(context_report(h.session, "m"))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"{count} old tool results sent as stubs · ~{tokens:,} tokens of tool output left out" in shown


def test_automatic_recall_brings_back_a_cleared_result_a_new_prompt_names(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    assert "54300" not in sent_messages(h.agent_requests()[-1])  # file 0 was cleared
    scripted_server.enqueue(Reply(text="54300.", count_tokens=True))
    h.session.prompt('What is the "deploy port of file 0"?')
    last = h.agent_requests()[-1]["messages"][-1]
    assert last["role"] == "user" and "Recalled automatically" in str(last["content"])
    assert "deploy port of file 0: 54300" in str(last["content"])


def test_a_compaction_after_clearing_summarizes_the_original_results(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    assert "FILE-0-START" not in sent_messages(h.agent_requests()[-1])
    assert h.session.compact() is not None
    asked = json.dumps(h.summarizer_requests()[-1]["messages"])
    assert "FILE-0-START" in asked and "Tool result cleared" not in asked


def test_recall_searches_the_cleared_results_as_it_searches_the_compacted_part(
        scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, settings=with_clearing(True))
    read_loop(h)
    out = run_tool(RecallTool(h.session.store, 10_000), {"query": '"deploy port of file 0"'}, ToolContext(h.cwd))
    assert not out.is_error and out.details is not None
    assert out.details["entryIds"] == [cleared_ids(h)[0]] and "54300" in out.text
