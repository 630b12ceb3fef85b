"""Compaction in the background (``compaction.background``), in a real AgentSession.

The summarizer of ``ReadingModel`` answers only while the test "reads" between two prompts; a summary
asked for inside a prompt (the foreground path) would fail with ``FOREGROUND``. Each turn adds 600
tokens (a 150-token question, a 450-token answer) and ``keepRecentTokens`` 1200 keeps the last two
turns, so every cut falls on a question. With the threshold at 8000 and the soft threshold at 92 %
(7360), the context passes the soft threshold after turn 13, a turn before the hard one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import agent_harness
import pytest
from background_model import SUMMARY, ReadingModel, padded
from model_paths import chat_model
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.compaction.background import THREAD_NAME
from pi_compact.agent.compaction.live_context import LiveContext
from pi_compact.agent.events import CompactionEnd, Notice, SessionEvent
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.cancel import CancelToken
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.compaction.tokens import estimate_tokens_chars4
from pi_compact.llm.protocol import ModelInfo
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings, Settings

# A window large enough that each history is summarized in one request; the threshold is 8000 tokens.
INFO = ModelInfo("openai/scripted", "openai", 20_000, None)
FOREGROUND_ONLY = CompactionSettings(reserve_tokens=12_000, keep_recent_tokens=1_200, token_estimator="chars4")
AHEAD = Settings(compaction=replace(FOREGROUND_ONLY, background=True, soft_threshold_percent=92))
SOFT_AT = 13  # the turn after which the context first passes 92 % of the threshold


@dataclass
class Run:
    session: AgentSession
    model: ReadingModel
    path: Path
    events: list[SessionEvent] = field(default_factory=list)

    def turn(self, number: int, cancel: CancelToken | None = None) -> dict[str, Any] | None:
        return self.session.prompt(padded(f"QUESTION-{number}", 150), cancel)

    def turns(self, first: int, last: int) -> None:
        for number in range(first, last + 1):
            final = self.turn(number)
            assert final is not None and final["stopReason"] == "stop"
            if background_threads():
                read_while_summarizing(self)

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines()][1:]

    def compactions(self) -> list[dict[str, Any]]:
        return [e for e in self.entries() if e["type"] == "compaction"]

    def notices(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice) and "background" in e.text]


_RUNS: list[Run] = []


@pytest.fixture(autouse=True)
def _close_sessions() -> Iterator[None]:
    """No test leaves a background thread behind (a failing one included)."""
    yield
    for run in _RUNS:
        run.model.reading.set()
        run.session.close()
    _RUNS.clear()
    assert background_threads() == []


def open_run(tmp_path: Path, settings: Settings = AHEAD, name: str = "session.jsonl", **model: Any) -> Run:
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    path = tmp_path / name
    reading = ReadingModel(INFO, **model)
    events: list[SessionEvent] = []
    session = AgentSession(store=SessionStore.create(path, str(cwd), 1_700_000_000_000), model=reading,
                           settings=settings, tools=[], system_prompt="You are the agent under test.", cwd=cwd,
                           emit=events.append)
    run = Run(session, reading, path, events)
    _RUNS.append(run)
    agent_harness._CREATED.append(run)  # its compaction events are checked for pairing at teardown
    return run


def background_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME and t.is_alive()]


def read_while_summarizing(run: Run) -> None:
    """The user reads and types: the summarizer may answer; returns once the background summary is made."""
    run.model.reading.set()
    for thread in background_threads():
        thread.join(10)
    assert background_threads() == []
    run.model.reading.clear()


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else "".join(str(b.get("text", "")) for b in content or ())


def entry_id_of(run: Run, marker: str) -> str:
    messages = (e for e in run.entries() if e["type"] == "message")
    return next(e["id"] for e in messages if message_text(e["message"]).startswith(marker))


def comparable(run: Run) -> list[dict[str, Any]]:
    """Each compaction entry by position and content (ids and timestamps differ between runs)."""
    entries = run.entries()
    position = {e["id"]: i for i, e in enumerate(entries)}
    return [
        {
            "at": position[e["id"]],
            "firstKept": position[e["firstKeptEntryId"]],
            "summary": e["summary"],
            "tokensBefore": e["tokensBefore"],
            "tail": [(m["role"], message_text(m)) for m in e["retainedTail"]],
            "details": {k: v for k, v in e["details"].items() if k != "background"},
        }
        for e in entries if e["type"] == "compaction"
    ]


def test_summary_made_while_the_user_reads_is_committed_before_the_next_request(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    assert len(background_threads()) == 1 and run.compactions() == []
    assert run.notices() == ["Context 39% full: summarizing older messages in the background; the summary is "
                             "written at the next turn."]
    read_while_summarizing(run)
    assert run.compactions() == []  # nothing is written before a turn boundary
    run.turn(SOFT_AT + 1)
    [entry] = run.compactions()
    assert entry["summary"].startswith(SUMMARY) and entry["details"]["background"] is True
    assert entry["firstKeptEntryId"] == entry_id_of(run, f"QUESTION-{SOFT_AT - 1} ")
    # Written before the next request, which already carries the summary and the kept tail only.
    first_request = [c for c in run.model.calls if c.kind == "agent"][SOFT_AT].request
    sent = json.dumps(first_request.messages)
    assert "QUESTION-1 " not in sent and "scripted summary line" in sent and f"QUESTION-{SOFT_AT - 1} " in sent
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME]
    [end] = [e for e in run.events if isinstance(e, CompactionEnd)]
    assert end.reason == "threshold" and end.result is not None and end.result["details"]["background"] is True


def test_thirty_nine_turns_commit_the_entries_a_foreground_compaction_writes_at_the_same_point(tmp_path: Path) -> None:
    # Thirty-nine turns: the summaries keep the user's (150-token) questions word for word (issue 41), so the
    # compactions come every 19 entries, and the foreground's fourth falls after the 40th turn, where the
    # background one is only made (it is written at the next turn).
    ahead = open_run(tmp_path, name="ahead.jsonl")
    ahead.turns(1, 39)
    # The same session in the foreground, compacted where the background one committed (after the turn before
    # the entry; a foreground threshold at the soft one would compact earlier, before sending the prompt that
    # crosses it, issue 43).
    entries = ahead.entries()
    after = [max(int(message_text(e["message"]).split()[0].split("-")[1]) for e in entries[:entries.index(c)]
                 if e["type"] == "message" and message_text(e["message"]).startswith("QUESTION-"))
             for c in ahead.compactions()]
    foreground = open_run(tmp_path, Settings(compaction=FOREGROUND_ONLY), name="foreground.jsonl")
    foreground.model.reading.set()
    for number in range(1, 40):
        foreground.turn(number)
        if number in after:
            foreground.session.compact(reason="threshold")
    assert len(ahead.compactions()) == 3
    assert comparable(ahead) == comparable(foreground)
    assert all(e["details"]["background"] is True for e in ahead.compactions())
    assert all("background" not in e["details"] for e in foreground.compactions())
    assert [c.thread for c in ahead.model.summarizer_calls()] == [THREAD_NAME] * 3
    assert [c.thread for c in foreground.model.summarizer_calls()] == ["MainThread"] * 3


def test_messages_added_while_summarizing_are_kept_after_the_planned_cut(tmp_path: Path) -> None:
    settings = Settings(compaction=replace(AHEAD.compaction, soft_threshold_percent=70))  # soft after turn 10
    run = open_run(tmp_path, settings)
    for number in range(1, 11):
        run.turn(number)
    assert len(background_threads()) == 1
    planned = prepare_compaction(run.entries(), settings.compaction)
    assert planned is not None

    def summary_arrives_during_the_turn(number: int, cancel: CancelToken) -> None:
        read_while_summarizing(run)

    run.model.before_answer = summary_arrives_during_the_turn
    run.turn(11)  # sent before the summary was ready
    [entry] = run.compactions()
    assert entry["firstKeptEntryId"] == planned.first_kept_entry_id == entry_id_of(run, "QUESTION-9 ")
    assert [message_text(m)[:10] for m in entry["retainedTail"]] == [
        "QUESTION-9", "ANSWER-9 l", "QUESTION-1", "ANSWER-10 ", "QUESTION-1", "ANSWER-11 "]
    # A foreground compaction now would have cut later: the plan was kept, not moved.
    before_commit = run.entries()[:-1]
    moved = prepare_compaction(before_commit, settings.compaction)
    assert moved is not None and moved.first_kept_entry_id == entry_id_of(run, "QUESTION-10 ")
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME]


def test_hard_threshold_waits_for_the_background_summary_instead_of_asking_again(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    run.model.before_answer = lambda number, cancel: run.model.reading.set()  # the summary comes late
    run.turn(SOFT_AT + 1)  # past the hard threshold
    [entry] = run.compactions()
    assert entry["details"]["background"] is True
    assert entry["firstKeptEntryId"] == entry_id_of(run, f"QUESTION-{SOFT_AT - 1} ")
    assert message_text(entry["retainedTail"][-1]).startswith(f"ANSWER-{SOFT_AT + 1} ")
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME]


def test_manual_compact_meanwhile_discards_the_background_summary(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    read_while_summarizing(run)
    run.model.reading.set()
    assert run.session.compact() is not None  # /compact: summarized afresh
    run.model.reading.clear()
    run.turn(SOFT_AT + 1)
    [entry] = run.compactions()
    assert "background" not in entry["details"]
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME, "MainThread"]


def test_moving_to_an_earlier_entry_meanwhile_drops_the_background_summary(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    read_while_summarizing(run)
    run.session.store.move_leaf(entry_id_of(run, f"ANSWER-{SOFT_AT - 1} "))  # as /tree does
    run.session.reload_context()
    before = run.path.read_bytes()
    run.session.check_before_prompt(CancelToken())
    assert run.path.read_bytes() == before and background_threads() == []
    run.turn(SOFT_AT + 1)
    assert run.compactions() == []
    assert len(background_threads()) == 1  # past the soft threshold again: a new plan is summarized


def test_changed_budget_meanwhile_replans_instead_of_committing(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    read_while_summarizing(run)
    run.session.set_settings(replace(AHEAD, compaction=replace(AHEAD.compaction, keep_recent_tokens=600)))
    run.session.check_before_prompt(CancelToken())
    assert run.compactions() == [] and len(background_threads()) == 1
    read_while_summarizing(run)
    run.session.check_before_prompt(CancelToken())
    [entry] = run.compactions()
    assert entry["firstKeptEntryId"] == entry_id_of(run, f"QUESTION-{SOFT_AT} ")
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME, THREAD_NAME]


def test_close_during_a_background_summary_leaves_the_file_byte_identical_and_no_thread(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    assert len(background_threads()) == 1
    before = run.path.read_bytes()
    run.session.close()  # /quit, Ctrl-D, /new
    assert background_threads() == []
    run.model.reading.set()
    assert run.path.read_bytes() == before
    assert [e for e in run.events if isinstance(e, CompactionEnd)] == []


def test_cancelled_turn_cancels_the_background_summary_and_writes_no_compaction(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    [job] = background_threads()
    run.model.before_answer = lambda number, cancel: cancel.cancel()  # Ctrl-C while the model answers
    final = run.turn(SOFT_AT + 1, CancelToken())
    assert final is not None and final["stopReason"] == "aborted"
    job.join(5)
    assert not job.is_alive()
    run.model.reading.set()
    assert run.compactions() == []
    assert [e for e in run.events if isinstance(e, CompactionEnd)] == []


def test_failed_background_summary_is_dropped_and_the_threshold_compacts_in_the_foreground(tmp_path: Path) -> None:
    run = open_run(tmp_path, fail_summaries=True)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    read_while_summarizing(run)  # the summarizer fails

    def summarizer_recovers(number: int, cancel: CancelToken) -> None:
        run.model.fail_summaries = False
        run.model.reading.set()

    run.model.before_answer = summarizer_recovers
    run.turn(SOFT_AT + 1)  # nothing to commit, no second job: compacted at the threshold, the normal way
    [entry] = run.compactions()
    assert entry["details"]["source"] == "model" and "background" not in entry["details"]
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME, "MainThread"]
    assert len(run.notices()) == 1


def test_a_summary_too_big_to_help_is_dropped_and_not_asked_for_again(tmp_path: Path) -> None:
    settings = Settings(compaction=replace(AHEAD.compaction, soft_threshold_percent=70))  # soft after turn 10
    run = open_run(tmp_path, settings, summary_tokens=4_500)  # with the kept 1200 tokens: past 5600
    run.turns(1, 10)
    run.turns(11, 13)  # dropped at the first boundary; no second job although past the soft threshold
    assert run.compactions() == [] and len(run.model.summarizer_calls()) == 1
    run.model.before_answer = lambda number, cancel: run.model.reading.set()
    run.turn(14)  # the hard threshold: compacted the normal way
    [entry] = run.compactions()
    assert "background" not in entry["details"]
    assert [c.thread for c in run.model.summarizer_calls()] == [THREAD_NAME, "MainThread"]


def test_the_kept_tail_is_sized_with_the_sessions_own_estimator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A calibration that says this provider counts 8× our estimate: the ~1,200-token tail would then be
    # ~9,600 tokens, past the soft threshold (7,360) by itself, so summarizing ahead cannot help.
    # The session's estimator is its live context's (``AgentSession.estimator`` reads it there).
    monkeypatch.setattr(LiveContext, "estimator_of", lambda self, model: lambda m: 8 * estimate_tokens_chars4(m))
    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    assert background_threads() == [] and run.model.summarizer_calls() == [] and run.notices() == []


def test_background_compaction_is_off_by_default(tmp_path: Path) -> None:
    run = open_run(tmp_path, Settings(compaction=FOREGROUND_ONLY))
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    assert background_threads() == [] and run.notices() == [] and run.model.summarizer_calls() == []



def test_leaving_the_terminal_ends_a_background_summary_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from pi_compact.settings.files import LoadedSettings
    from pi_compact.ui.repl import Repl

    run = open_run(tmp_path)
    for number in range(1, SOFT_AT + 1):
        run.turn(number)
    assert len(background_threads()) == 1
    before = run.path.read_bytes()
    runtimes: Any = SimpleNamespace(model_name=lambda settings: INFO.model)
    repl = Repl(runtimes, LoadedSettings(AHEAD, (), {}))
    repl.state = SimpleNamespace(session=run.session)  # type: ignore[assignment]
    monkeypatch.setattr(repl, "_loop", lambda: 0)  # Ctrl-D at the prompt
    assert repl.loop() == 0
    assert background_threads() == []
    run.model.reading.set()
    assert run.path.read_bytes() == before


def test_print_mode_never_summarizes_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_compact.cli.wiring import run_print_mode
    from pi_compact.options import AppOptions

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    model = ReadingModel(INFO, answer_tokens=7_500)  # one answer past the soft threshold, under the hard one
    options = AppOptions(cwd=tmp_path, prompt="QUESTION", no_session=True)
    assert run_print_mode(options, AHEAD, model=model) == 0
    assert capsys.readouterr().out.startswith("ANSWER-1 ")
    assert background_threads() == [] and model.summarizer_calls() == []


def test_a_background_summary_shares_the_real_adapter_with_the_running_turn(
    scripted_server: ScriptedServer, tmp_path: Path, model_path: str
) -> None:
    settings = replace(agent_harness.SETTINGS, compaction=replace(
        agent_harness.SETTINGS.compaction, background=True, soft_threshold_percent=70))
    model = chat_model(model_path, agent_harness.INFO, api_base=scripted_server.base_url, api_key="test",
                       retry=settings.retry)
    cwd, path, events = tmp_path / "work", tmp_path / "session.jsonl", []
    cwd.mkdir()
    session = AgentSession(store=SessionStore.create(path, str(cwd), 1_700_000_000_000), model=model,
                           settings=settings, tools=default_tools(), system_prompt="You are the agent under test.",
                           cwd=cwd, emit=events.append)
    h = agent_harness.Harness(session, scripted_server, path, cwd, events)
    agent_harness._CREATED.append(h)
    # Summarizer requests get a summary (a little slow); the agent's come from the queue (slower).
    scripted_server.route = lambda body: agent_harness.summary_reply(delay_s=0.3) \
        if body["messages"][0].get("content") == SYSTEM_PROMPT else None
    scripted_server.enqueue(
        Reply(text=agent_harness.padded("ANSWER-ONE"), prompt_tokens=1_000),
        Reply(text=agent_harness.padded("ANSWER-TWO"), prompt_tokens=2_000),
        Reply(text=agent_harness.padded("ANSWER-THREE"), prompt_tokens=6_000),  # past 70 % of 8000
        Reply(text=agent_harness.padded("ANSWER-FOUR"), prompt_tokens=6_500, delay_s=1.0),
        Reply(text="ANSWER-FIVE", prompt_tokens=1_000),
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO", "QUESTION-THREE"):
        h.session.prompt(agent_harness.padded(marker))
    assert len(background_threads()) == 1
    final = h.session.prompt(agent_harness.padded("QUESTION-FOUR"))  # while the summarizer answers
    assert final is not None and final["stopReason"] == "stop"
    for thread in background_threads():
        thread.join(10)
    h.session.check_before_prompt(CancelToken())  # committed by now, or at this boundary
    [entry] = [e for e in h.entries() if e["type"] == "compaction"]
    assert entry["summary"].startswith(agent_harness.SUMMARY) and entry["details"]["background"] is True
    h.session.prompt("QUESTION-FIVE")
    assert agent_harness.summary_in(h.agent_requests()[-1])
    assert len(h.summarizer_requests()) == 1
    h.session.close()


def test_a_background_summary_is_written_by_the_compaction_model(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    compaction = replace(agent_harness.SETTINGS.compaction, background=True, soft_threshold_percent=70,
                         model="openai/small-summarizer")
    settings = replace(agent_harness.SETTINGS, compaction=compaction)
    model = chat_model("direct", agent_harness.INFO, api_base=scripted_server.base_url, api_key="test",
                       retry=settings.retry)
    small = ModelInfo("openai/small-summarizer", "openai", agent_harness.INFO.context_window, None)

    def make_summarizer(name: str, _settings: Settings) -> Any:
        assert name == "openai/small-summarizer"
        return chat_model("direct", small, api_base=scripted_server.base_url, api_key="test", retry=settings.retry)

    cwd, path, events = tmp_path / "work", tmp_path / "session.jsonl", []
    cwd.mkdir()
    session = AgentSession(store=SessionStore.create(path, str(cwd), 1_700_000_000_000), model=model,
                           settings=settings, tools=default_tools(), system_prompt="You are the agent under test.",
                           cwd=cwd, emit=events.append, make_summarizer=make_summarizer)
    h = agent_harness.Harness(session, scripted_server, path, cwd, events)
    agent_harness._CREATED.append(h)
    scripted_server.route = lambda body: agent_harness.summary_reply() \
        if body["messages"][0].get("content") == SYSTEM_PROMPT else None
    scripted_server.enqueue(
        Reply(text=agent_harness.padded("ANSWER-ONE"), prompt_tokens=1_000),
        Reply(text=agent_harness.padded("ANSWER-TWO"), prompt_tokens=2_000),
        Reply(text=agent_harness.padded("ANSWER-THREE"), prompt_tokens=6_000),  # past 70 % of 8000
        Reply(text="ANSWER-FOUR", prompt_tokens=1_000),
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO", "QUESTION-THREE"):
        h.session.prompt(agent_harness.padded(marker))
    for thread in background_threads():
        thread.join(10)
    h.session.prompt("QUESTION-FOUR")
    [entry] = [e for e in h.entries() if e["type"] == "compaction"]
    assert entry["details"]["background"] is True
    assert entry["details"]["summaryModel"] == "openai/small-summarizer"
    assert {r["model"] for r in h.summarizer_requests()} == {"small-summarizer"}
    h.session.close()
