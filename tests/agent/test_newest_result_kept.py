"""The file the user asked about survives the compactions of its turn (issue 44, item 2).

The walk: the model read a ~40k-character NOTES.md on a 16k window; the estimate was 5.5k tokens low, the
request overflowed (llama.cpp: "request (18735 tokens) exceeds the available context size (16384
tokens)"), and the overflow compaction summarized the read itself (the failed reply after it was a
valid cut), so the retried turn had nothing to answer from. Now the turn's newest tool result is never
summarized, the size the server stated corrects the estimate before the retry, and a result too big for
the window even so is sent cut to what fits, with a note saying how to see the rest.
"""

from __future__ import annotations

from pathlib import Path

from agent_harness import SETTINGS, WINDOW, Harness, _system_of, make_harness, padded, summary_reply
from scripted_server import Reply, ScriptedServer, ToolCallReply, error_reply

from pi_compact.agent.events import CompactionEnd
from pi_compact.compaction.prompts import SYSTEM_PROMPT

REQUESTED = 16_500  # what the server says the overflowing prompt had: far more than our ~8k estimate
LLAMA_OVERFLOW = (f"request ({REQUESTED} tokens) exceeds the available context size ({WINDOW} tokens), "
                  "try increasing it")


def _notes(lines: int = 480) -> str:
    return "\n".join(f"- meeting {n}: 3 4 5 6 7 8 9 notes of the day" for n in range(1, lines + 1))


def _overflow_after_read(tmp_path: Path, server: ScriptedServer, *after: Reply) -> Harness:
    """One finished turn, then a prompt whose read of NOTES.md overflows the window on the next request."""
    server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    h = make_harness(server, tmp_path, settings=SETTINGS)
    (h.cwd / "NOTES.md").write_text(_notes())
    server.enqueue(Reply(text="Hello.", prompt_tokens=900),
                   Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=1_000),
                   error_reply(400, LLAMA_OVERFLOW), *after)
    h.session.prompt(padded("Earlier work on calc.py", 2_500))
    h.session.prompt("What happened at meeting 240 in NOTES.md?")
    return h


def _tool_texts(request: dict[str, object]) -> list[str]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


def test_the_overflow_compaction_keeps_the_turns_newest_tool_result(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _overflow_after_read(tmp_path, scripted_server, Reply(text="Meeting 240 took notes.", prompt_tokens=7_000))
    [end] = [e for e in h.events if isinstance(e, CompactionEnd)]
    assert end.reason == "overflow" and end.result is not None
    read_call = next(e for e in h.entries() if e.get("type") == "message" and e["message"]["role"] == "assistant"
                     and any(b.get("type") == "toolCall" for b in e["message"]["content"]))
    assert end.result["firstKeptEntryId"] == read_call["id"]  # the call and its result stay in the context
    retried = h.agent_requests()[-1]
    assert any("- meeting 1: 3 4 5" in text for text in _tool_texts(retried))


def test_the_size_the_server_stated_corrects_the_estimate_before_the_retry(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _overflow_after_read(tmp_path, scripted_server, Reply(text="Meeting 240 took notes.", prompt_tokens=7_000))
    [end] = [e for e in h.events if isinstance(e, CompactionEnd)]
    assert end.result is not None
    # Our chars/4 estimate of that prompt was about 7.5k; the compaction starts from the server's count.
    assert end.result["tokensBefore"] >= REQUESTED * 0.95


def test_a_newest_result_too_big_for_the_window_is_sent_cut_with_a_note_and_kept_whole_in_the_file(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _overflow_after_read(tmp_path, scripted_server, Reply(text="Meeting 240 took notes.", prompt_tokens=7_000))
    final_texts = _tool_texts(h.agent_requests()[-1])
    [cut] = [text for text in final_texts if "Cut to fit the context window" in text]
    assert "Read NOTES.md with offset=" in cut and "use recall" in cut
    assert "- meeting 480:" not in cut
    assert h.session.messages[-1]["content"][0]["text"] == "Meeting 240 took notes."  # answered, not the summary
    results = [e["message"] for e in h.entries() if e.get("type") == "message" and e["message"]["role"] == "toolResult"]
    assert "- meeting 480:" in results[-1]["content"][0]["text"]  # the file keeps the whole result


def test_a_first_prompt_whose_read_overflows_is_retried_with_the_result_cut_though_nothing_was_summarized(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    scripted_server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    h = make_harness(scripted_server, tmp_path, settings=SETTINGS)
    (h.cwd / "NOTES.md").write_text(_notes())
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=300),
                            error_reply(400, LLAMA_OVERFLOW), Reply(text="Meeting 2 took notes.", prompt_tokens=7_000))
    final = h.session.prompt("What happened at meeting 2 in NOTES.md?")
    assert final is not None and final["stopReason"] == "stop"
    assert any("Cut to fit the context window" in text for text in _tool_texts(h.agent_requests()[-1]))


