"""An overflow of a request that already carried the newest tool result cut (issue 44, the second walk).

The walk: NOTES.md read on the embedded model's 16k window was sent cut to fit, the server still said
"request (17719 tokens) exceeds the available context size (16384 tokens)", and nothing shrank the cut
again: the estimate was proven against the uncut context (bigger than the stated size, so it proved
nothing) and a second overflow in the same prompt was given up at once. Now the size the server stated
is compared with what was sent, and each such overflow is retried with a smaller cut until the result
is down to ``MIN_SHOWN_TOKENS``.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent_harness import SETTINGS, WINDOW, Harness, _system_of, make_harness, padded, summary_reply
from scripted_server import Reply, ScriptedServer, ToolCallReply, error_reply

from pi_compact.agent.events import CompactionEnd, Notice
from pi_compact.compaction.newest_fit import NEWEST_SHARE
from pi_compact.compaction.prompts import SYSTEM_PROMPT

CUT_NOTE = "Cut to fit the context window"


def _overflow(stated: int) -> Reply:
    return error_reply(400, f"request ({stated} tokens) exceeds the available context size ({WINDOW} tokens), "
                            "try increasing it")


def _notes(lines: int) -> str:
    return "\n".join(f"- meeting {n}: 3 4 5 6 7 8 9 notes of the day" for n in range(1, lines + 1))


def _newest_tool_text(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "tool"][-1]["content"])


def _read_notes(tmp_path: Path, server: ScriptedServer, lines: int, *after: Reply) -> Harness:
    server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    h = make_harness(server, tmp_path, settings=SETTINGS)
    (h.cwd / "NOTES.md").write_text(_notes(lines))
    server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=300), *after)
    h.session.prompt("What happened at meeting 2 in NOTES.md?")
    return h


def test_an_overflow_of_a_request_sent_cut_is_proven_against_what_was_sent_and_the_retry_cuts_more(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # ~12k tokens of notes by chars/4 on a 10k window: the first request already carries them cut to ~8k.
    h = _read_notes(tmp_path, scripted_server, 900, _overflow(11_000), Reply(text="Meeting 2 took notes.",
                                                                            prompt_tokens=7_000))
    first, retried = h.agent_requests()[1:3]
    assert CUT_NOTE in _newest_tool_text(first)
    # 11,000 counted where ~8,000 were estimated: the retry's cut is smaller by about that share.
    assert len(_newest_tool_text(retried)) < 0.8 * len(_newest_tool_text(first))
    assert h.session.messages[-1]["content"][0]["text"] == "Meeting 2 took notes."


def test_a_second_overflow_in_one_prompt_is_retried_with_a_smaller_cut(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # 480 lines (~6.5k tokens) look like they fit; the server counts 16,500, then 11,000 for the cut retry.
    h = _read_notes(tmp_path, scripted_server, 480, _overflow(16_500), _overflow(11_000),
                    Reply(text="Meeting 2 took notes.", prompt_tokens=7_000))
    whole, cut, smaller = (_newest_tool_text(r) for r in h.agent_requests()[1:4])
    assert CUT_NOTE not in whole and CUT_NOTE in cut and CUT_NOTE in smaller
    assert len(smaller) < len(cut) < len(whole)
    assert h.session.messages[-1]["content"][0]["text"] == "Meeting 2 took notes."
    assert not [e for e in h.events if isinstance(e, Notice) and "recovery failed" in e.text]


def test_overflows_that_go_on_are_given_up_once_the_cut_cannot_shrink_any_more(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _read_notes(tmp_path, scripted_server, 480, _overflow(16_500), _overflow(14_000), _overflow(13_000),
                    _overflow(12_500), _overflow(12_000), _overflow(11_900), _overflow(11_800))
    requests = h.agent_requests()
    assert len(requests) <= 7  # each retry shrank the cut; none repeated one that had overflowed
    sizes = [len(_newest_tool_text(r)) for r in requests[1:]]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
    final = h.session.messages[-1]
    assert final["stopReason"] == "error"


def _earlier_turn_then_read(tmp_path: Path, server: ScriptedServer) -> Harness:
    """An earlier turn, then a read of ~12k tokens of notes on the 10k window: the check after the tool
    turn compacts the earlier turn and keeps the read, which the next request carries cut to fit."""
    server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    h = make_harness(server, tmp_path, settings=SETTINGS)
    (h.cwd / "NOTES.md").write_text(_notes(900))
    server.enqueue(Reply(text=padded("ONE-ANSWER", 1_000), prompt_tokens=4_100, completion_tokens=1_000),
                   Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=3_700),
                   Reply(text="Meeting 2 took notes.", prompt_tokens=7_900))
    h.session.prompt(padded("ONE-QUESTION", 3_000))
    h.session.prompt("What happened at meeting 2 in NOTES.md?")
    return h


def test_the_compaction_blocks_after_figure_counts_the_kept_newest_result_as_it_will_be_sent(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _earlier_turn_then_read(tmp_path, scripted_server)
    [end] = [e for e in h.events if isinstance(e, CompactionEnd) and e.result is not None]
    after = end.result["estimatedTokensAfter"]
    # The whole read is ~12k tokens; the request after the compaction carries it cut to a fifth of the 10k
    # window (~2,000), next to a summary and the earlier turn's ~1,000: the figure counts the cut, not the whole.
    assert CUT_NOTE in _newest_tool_text(h.agent_requests()[-1])
    assert NEWEST_SHARE * WINDOW < after <= NEWEST_SHARE * WINDOW + 2_000


def test_a_compaction_the_cut_newest_result_makes_fit_is_neither_futile_nor_warned_about(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _earlier_turn_then_read(tmp_path, scripted_server)
    assert [e.reason for e in h.events if isinstance(e, CompactionEnd) and e.result is not None] == ["threshold"]
    assert not [e for e in h.events if isinstance(e, Notice) and "could not bring the context" in e.text]
    # Two futile compactions in a row turn automatic compaction off (the walk: "Automatic compaction is off").
    assert h.session._compactions.guard.streak == 0



def test_a_read_sent_cut_spends_no_summary_on_what_cannot_free_much_and_leaves_automatic_compaction_on(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # The walk: summaries of a few tokens beside one big read, each "Nothing gained", then automatic
    # compaction off. The request fits with the read cut; nothing else is worth a model call.
    h = _read_notes(tmp_path, scripted_server, 900, _overflow(11_000), Reply(text="Meeting 2 took notes.",
                                                                            prompt_tokens=7_000))
    assert h.summarizer_requests() == []
    assert not [e for e in h.events if isinstance(e, Notice) and "Automatic compaction is off" in e.text]
    assert h.session.auto_compact and not h.session.compaction_stopped
    assert h.session.messages[-1]["content"][0]["text"] == "Meeting 2 took notes."


def test_clearing_a_result_that_was_sent_cut_takes_off_what_the_provider_counted_of_it(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    h = _earlier_turn_then_read(tmp_path, scripted_server)
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=7_900),
                            Reply(text="Meeting 3 took notes too.", prompt_tokens=7_900))
    h.session.prompt(padded("And at meeting 3?", 1_000))
    [cleared] = [e.text for e in h.events if isinstance(e, Notice) and e.text.startswith("Cleared 1 old tool result")]
    freed, now = (int(n.replace(",", "")) for n in re.findall(r"~([\d,-]+)", cleared)[:2])
    # The replies counted the read as it was sent, cut to about 7k tokens; clearing cannot free its whole ~12k.
    assert freed < 8_000 and now > 0


def test_an_overflow_right_after_a_compaction_is_retried_cut_without_doubting_the_window(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # The walk: the compaction after the read left nothing to compact, the read went out whole and the
    # server counted 18,287 tokens; the notice then advised a smaller contextWindow, which was right all along.
    scripted_server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None
    h = make_harness(scripted_server, tmp_path, settings=SETTINGS)
    (h.cwd / "NOTES.md").write_text(_notes(480))
    scripted_server.enqueue(
        Reply(text=padded("ONE-ANSWER", 1_000), prompt_tokens=4_100, completion_tokens=1_000),
        Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=4_200),
        _overflow(16_500), Reply(text="Meeting 2 took notes.", prompt_tokens=7_000))
    h.session.prompt(padded("ONE-QUESTION", 3_000))
    h.session.prompt("What happened at meeting 2 in NOTES.md?")
    written = [e.reason for e in h.events if isinstance(e, CompactionEnd) and e.result is not None]
    notices = [e.text for e in h.events if isinstance(e, Notice)]
    assert written == ["threshold"]
    assert not [text for text in notices if "contextWindow" in text]
    assert "Context overflow (the provider counted 16,500 tokens): retrying with less of the newest tool result, " \
           "cut to fit." in notices
    assert CUT_NOTE in _newest_tool_text(h.agent_requests()[-1])
    assert h.session.messages[-1]["content"][0]["text"] == "Meeting 2 took notes."


def test_a_read_sent_cut_is_carried_the_same_cut_by_the_next_prompts_requests(
    scripted_server: ScriptedServer, tmp_path: Path,
) -> None:
    # Sent whole once no longer the turn's newest result, it overflowed the window (issue 44's seventh walk:
    # 19,694 tokens) and changed the prompt's prefix the provider had cached.
    h = _read_notes(tmp_path, scripted_server, 900, Reply(text="Meeting 2 took notes.", prompt_tokens=3_000),
                    Reply(text="Yes.", prompt_tokens=3_100))
    h.session.prompt("Are you sure?")
    first, then = (_newest_tool_text(r) for r in h.agent_requests()[1:3])
    assert CUT_NOTE in first and then == first
