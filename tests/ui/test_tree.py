"""The session tree as pi has it: ``/tree`` moves (with and without a branch summary), ``/fork``, ``/clone``,
``/name``; each result checked with pi's own SessionManager, and compaction after a branch switch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, chain, label, msg, user
from pi_session import pi_view
from rich.console import Console
from ui_harness import SETTINGS, FakeModel, chat, make_state, squeeze

from pi_compact.agent.compaction.navigator import Navigator, TreeDecision
from pi_compact.agent.compaction.summarizer import Summarizer
from pi_compact.agent.events import SessionEvent, TreeEnd, TreeStart
from pi_compact.agent.extensions import ExtensionHooks, load_extensions
from pi_compact.cancel import CancelToken
from pi_compact.compaction.branch_summary import NO_CONTENT, prepare_branch
from pi_compact.compaction.prompts import BRANCH_PREAMBLE as PREAMBLE
from pi_compact.compaction.tokens import estimate_tokens_chars4
from pi_compact.errors import ModelError
from pi_compact.llm.protocol import ChatRequest, ModelInfo, StreamEvent
from pi_compact.messages import text_of
from pi_compact.session.store import SessionStore
from pi_compact.session.tree import branch_copy, landing, tree_nodes
from pi_compact.ui.commands import dispatch
from pi_compact.ui.state import ReplState
from pi_compact.ui.tree_view import moved_renderable


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "project" / ".pi").mkdir(parents=True)
    (tmp_path / "project" / ".pi" / "settings.json").write_text(json.dumps(SETTINGS))
    return tmp_path / "project"


def three_turns(project: Path, model: Any = None) -> tuple[ReplState, Any, FakeModel]:
    model = model or FakeModel("first answer", "second answer", "third answer", "fourth answer")
    state, buffer = make_state(project, model)
    chat(state, "first question", "second question", "third question")
    return state, buffer, model


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def ours(path: Path) -> list[dict[str, Any]]:
    return [dict(m) for m in SessionStore.open(path, str(path.parent), 0).context().messages]


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [text_of(m.get("content")) or str(m.get("summary", ""))[:20] for m in messages]


# ---- /tree -----------------------------------------------------------------------------------------


def test_tree_lists_user_messages_and_marks_where_you_are(project: Path) -> None:
    state, buffer, _ = three_turns(project)
    dispatch(state, "/tree")
    rows = [line.strip() for line in buffer.getvalue().splitlines() if line.strip()[:1].isdigit()]
    assert rows == ["1 first question", "2 second question", "3 third question",
                    "4 … assistant: third answer  ← you are here"]


def test_a_move_without_summary_is_kept_across_resume_and_pi_opens_at_the_same_leaf(
    project: Path, tmp_path: Path
) -> None:
    state, buffer, _ = three_turns(project)
    dispatch(state, "/tree 2 --no-summary")
    path = project / "s.jsonl"
    last = lines(path)[-1]
    assert (last["type"], last["customType"]) == ("custom", "pi-compact.move")
    assert texts(state.session.messages) == ["first question", "first answer"]
    assert "second question" in squeeze(buffer)  # the message moved to, to send again
    theirs = pi_view(path, tmp_path)
    assert theirs["leafId"] == last["id"] == SessionStore.open(path, str(project), 0).leaf_id
    assert theirs["messages"] == ours(path)
    assert texts(theirs["messages"]) == ["first question", "first answer"]


def test_a_move_with_a_summary_writes_a_branch_summary_as_pi_does(project: Path, tmp_path: Path) -> None:
    state, buffer, model = three_turns(project)
    dispatch(state, "/tree 2 --summary keep the parser notes")
    asked = text_of(model.requests[-1].messages[0]["content"])
    assert "<conversation>" in asked and "keep the parser notes" in asked
    assert "third question" in asked and "first question" not in asked  # only the branch left behind
    path = project / "s.jsonl"
    entries = lines(path)
    summary = entries[-1]
    first_answer = next(e for e in entries if text_of(e.get("message", {}).get("content")) == "first answer")
    assert summary["type"] == "branch_summary"
    assert (summary["parentId"], summary["fromId"]) == (first_answer["id"], first_answer["id"])
    assert summary["summary"].startswith(PREAMBLE + "## Goal")
    assert summary["details"] == {"readFiles": [], "modifiedFiles": [], "summaryModel": "fake/model",
                                  "usage": summary["details"]["usage"]}
    assert summary["details"]["usage"]["input"] == 1000  # the one summary request, as a compaction records it
    theirs = pi_view(path, tmp_path)
    assert [m["role"] for m in theirs["messages"]] == ["user", "assistant", "branchSummary"]
    assert theirs["messages"] == ours(path) and theirs["leafId"] == summary["id"]
    assert "summarized by the model" in squeeze(buffer)
    chat(state, "a new direction")
    assert lines(path)[-2]["parentId"] == summary["id"]  # the conversation goes on after the summary


def test_going_back_to_the_tip_of_the_old_branch_summarizes_the_new_one(project: Path, tmp_path: Path) -> None:
    state, buffer, _ = three_turns(project)
    dispatch(state, "/tree 2 --no-summary")
    chat(state, "another way")
    dispatch(state, "/tree")
    rows = [line.strip() for line in buffer.getvalue().splitlines() if line.strip()[:1].isdigit()]
    tip = next(row for row in rows if "assistant: third answer" in row)
    dispatch(state, f"/tree {tip.split()[0]} --summary")
    assert [m["role"] for m in state.session.messages[-2:]] == ["assistant", "branchSummary"]
    assert texts(state.session.messages)[-2] == "third answer"
    path = project / "s.jsonl"
    assert [m["role"] for m in ours(path)][-2:] == ["assistant", "branchSummary"]
    assert pi_view(path, tmp_path)["messages"] == ours(path)


def test_a_cancelled_branch_summary_writes_nothing_and_keeps_the_leaf(project: Path) -> None:
    state, _, _ = three_turns(project)
    store = state.session.store
    before, leaf = (project / "s.jsonl").read_bytes(), store.leaf_id
    events: list[SessionEvent] = []
    token = CancelToken()
    token.cancel()
    target = next(e["id"] for e in store.entries if e.get("message", {}).get("role") == "user")
    result = Navigator(store, state.session.model, state.session.settings, events.append).navigate(
        target, summarize=True, cancel=token)
    assert result is None and store.leaf_id == leaf
    assert (project / "s.jsonl").read_bytes() == before
    assert [type(e) for e in events] == [TreeStart, TreeEnd] and isinstance(events[1], TreeEnd) and events[1].aborted


class _FailingSummaries(FakeModel):
    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        if "<conversation>" in text_of(request.messages[-1]["content"]):
            raise ModelError("503 the summarizer is down")
        return super().stream(request, cancel)


def test_a_failing_summarizer_falls_back_to_a_model_free_branch_summary(project: Path) -> None:
    state, buffer, _ = three_turns(project, _FailingSummaries("a", "b", "c"))
    dispatch(state, "/tree 1 --summary")
    summary = lines(project / "s.jsonl")[-1]
    assert summary["type"] == "branch_summary" and summary["fromId"] != "root"
    assert summary["details"]["fallback"] is True and "503" in summary["details"]["error"]
    assert "summarized by a model-free fallback" in squeeze(buffer)


def _compaction_model(model: FakeModel) -> Summarizer:
    return Summarizer("openai/mini", lambda: model)


def test_a_branch_summary_is_written_by_the_compaction_model_with_its_usage(project: Path) -> None:
    state, _, chat_model = three_turns(project)
    asked_before = len(chat_model.requests)
    mini = FakeModel(input_tokens=700)
    mini._info = ModelInfo("openai/mini", "openai", 4000, 500)
    target = next(e["id"] for e in state.session.store.entries if e.get("message", {}).get("role") == "user")
    outcome = Navigator(state.session.store, chat_model, state.session.settings,
                        summarizer=_compaction_model(mini)).navigate(target, summarize=True)
    assert outcome is not None and outcome.source == "model"
    assert len(chat_model.requests) == asked_before and len(mini.requests) == 1
    assert mini.requests[0].max_tokens is not None and mini.requests[0].max_tokens <= 500  # sized for it
    summary = lines(project / "s.jsonl")[-1]
    assert summary["details"]["summaryModel"] == "openai/mini"
    assert (summary["details"]["usage"]["input"], summary["details"]["usage"]["output"]) == (700, 10)
    console = Console(record=True, width=200)
    console.print(moved_renderable(outcome))
    shown = console.export_text()
    assert "summarized by the model openai/mini." in shown
    assert "Files: 0 read, 0 modified · 700 tokens in, 10 out · cost unknown" in shown


def test_a_failing_compaction_model_names_itself_in_the_branch_summary_fallback(project: Path) -> None:
    state, _, chat_model = three_turns(project)
    failing = _FailingSummaries()
    failing._info = ModelInfo("openai/mini", "openai", 4000, 500)
    target = next(e["id"] for e in state.session.store.entries if e.get("message", {}).get("role") == "user")
    outcome = Navigator(state.session.store, chat_model, state.session.settings,
                        summarizer=_compaction_model(failing)).navigate(target, summarize=True)
    assert outcome is not None and outcome.source == "fallback"
    error = lines(project / "s.jsonl")[-1]["details"]["error"]
    assert error.startswith("The compaction model openai/mini failed: ") and "503" in error


class _Hooks:
    def __init__(self, decision: TreeDecision | None) -> None:
        self.decision = decision
        self.seen: list[Any] = []

    def before_tree(self, event: Any) -> TreeDecision | None:
        self.seen.append(event)
        return self.decision


def test_session_before_tree_can_cancel_or_supply_the_summary(project: Path) -> None:
    state, _, model = three_turns(project)
    store = state.session.store
    target = next(e["id"] for e in store.entries if e.get("message", {}).get("role") == "assistant")
    before = (project / "s.jsonl").read_bytes()
    cancelling = _Hooks(TreeDecision(cancel=True))
    assert Navigator(store, model, state.session.settings, hooks=cancelling).navigate(target, summarize=True) is None
    assert (project / "s.jsonl").read_bytes() == before
    event = cancelling.seen[0]
    assert (event.target_id, event.user_wants_summary) == (target, True)
    assert len(event.entries_to_summarize) == 4  # second and third question and answer
    requests = len(model.requests)
    supplying = _Hooks(TreeDecision(summary="Summary from an extension.", details={"mine": 1}))
    outcome = Navigator(store, model, state.session.settings, hooks=supplying).navigate(target, summarize=True)
    assert outcome is not None and outcome.source == "extension" and len(model.requests) == requests
    entry = lines(project / "s.jsonl")[-1]
    assert (entry["summary"], entry["details"], entry["fromHook"], entry["parentId"]) == (
        "Summary from an extension.", {"mine": 1}, True, target)


def test_an_extension_file_can_cancel_a_move(project: Path, tmp_path: Path) -> None:
    extension = tmp_path / "no_tree.py"
    extension.write_text("def session_before_tree(event):\n    return {'cancel': True}\n")
    reports: list[str] = []
    hooks = ExtensionHooks(load_extensions([extension], reports.append), reports.append)
    state, _, model = three_turns(project)
    target = next(e["id"] for e in state.session.store.entries if e.get("type") == "message")
    assert Navigator(state.session.store, model, state.session.settings, hooks=hooks).navigate(target) is None
    assert reports == []


def test_compaction_after_a_branch_switch_uses_only_the_current_branch(project: Path) -> None:
    model = FakeModel("a1 " * 100, "a2 " * 100, "a3 " * 100, "b2 " * 100, "b3 " * 100)
    state, _ = make_state(project, model)
    chat(state, "ONE " * 100, "TWO " * 100, "THREE " * 100)
    dispatch(state, "/tree 2 --no-summary")
    chat(state, "OTHER " * 100, "MORE " * 100)
    dispatch(state, "/compact")
    asked = " ".join(text for r in model.requests if "<conversation>" in (text := text_of(r.messages[0]["content"])))
    assert "ONE" in asked and "OTHER" in asked
    assert "TWO" not in asked and "THREE" not in asked  # the abandoned branch is not summarized
    assert state.session.compactions == 1


# ---- /fork, /clone, /name ---------------------------------------------------------------------------


def test_fork_starts_a_new_file_from_before_a_user_message(project: Path, tmp_path: Path) -> None:
    state, buffer, _ = three_turns(project)
    old = project / "s.jsonl"
    before = old.read_bytes()
    dispatch(state, "/fork")
    assert "2 second question" in squeeze(buffer)
    dispatch(state, "/fork 2")
    new = state.session.store.path
    assert new is not None and new != old and new.parent == old.parent and old.read_bytes() == before
    assert texts(state.session.messages) == ["first question", "first answer"]
    theirs = pi_view(new, tmp_path)
    assert theirs["header"]["parentSession"] == str(old)
    assert theirs["header"]["id"] in new.name
    assert theirs["messages"] == ours(new) and texts(theirs["messages"]) == ["first question", "first answer"]
    assert "Forked: now in" in squeeze(buffer) and "second question" in buffer.getvalue().splitlines()[-1]


def test_fork_before_the_first_answer_keeps_the_new_files_header_until_it_is_written(
    project: Path, tmp_path: Path
) -> None:
    state, buffer, _ = three_turns(project)
    old = project / "s.jsonl"
    dispatch(state, "/fork 1")  # from before the first question: nothing answered to copy, nothing written
    new = state.session.store.path
    assert new is not None and new != old and not new.exists()
    assert "(written with the first answer)" in squeeze(buffer)
    chat(state, "a fresh start")
    theirs = pi_view(new, tmp_path)
    assert theirs["header"]["parentSession"] == str(old)  # pi's link to the session it came from
    assert theirs["header"]["id"] in new.name
    assert texts(theirs["messages"]) == ["a fresh start", "fourth answer"]


def test_clone_copies_the_current_branch_into_a_new_file(project: Path, tmp_path: Path) -> None:
    state, buffer, _ = three_turns(project)
    dispatch(state, "/tree 2 --no-summary")
    chat(state, "the other way")
    dispatch(state, "/clone")
    new = state.session.store.path
    assert new is not None and new != project / "s.jsonl"
    theirs = pi_view(new, tmp_path)
    assert theirs["messages"] == ours(project / "s.jsonl") == ours(new)
    assert "third question" not in json.dumps(lines(new))  # only the current branch is copied
    assert theirs["leafId"] == lines(new)[-1]["id"] and theirs["header"]["parentSession"] == str(project / "s.jsonl")
    chat(state, "continue in the clone")
    assert texts(ours(new))[-2:] == ["continue in the clone", "ok"]


def test_name_writes_pis_session_info(project: Path, tmp_path: Path) -> None:
    state, buffer, _ = three_turns(project)
    dispatch(state, "/name  Parser\nrework ")
    dispatch(state, "/name")
    assert "Session named 'Parser rework'." in buffer.getvalue() and "Session name: Parser rework" in buffer.getvalue()
    theirs = pi_view(project / "s.jsonl", tmp_path)
    assert theirs["name"] == "Parser rework" and theirs["messages"] == ours(project / "s.jsonl")


# ---- the pure parts ---------------------------------------------------------------------------------


def test_tree_rows_indent_at_forks_and_mark_compactions_and_branch_summaries() -> None:
    entries = chain(user("root question"), assistant("root answer"))
    entries += [
        msg(user("left"), id="l1", parent="test-id-1"),
        msg(assistant("left answer"), id="l2", parent="l1"),
        {"type": "branch_summary", "id": "b1", "parentId": "test-id-1", "timestamp": "2025-01-02T00:00:00.000Z",
         "fromId": "test-id-1", "summary": "tried left"},
        msg(user("right"), id="r1", parent="b1"),
        {"type": "compaction", "id": "c1", "parentId": "r1", "timestamp": "2025-01-02T00:00:00.000Z",
         "summary": "s", "firstKeptEntryId": "r1", "tokensBefore": 1234},
    ]
    nodes = tree_nodes(entries, "c1")
    assert [(n.number, n.kind, n.text, n.depth, n.on_branch, n.current) for n in nodes] == [
        (1, "user", "root question", 0, True, False),
        (2, "user", "left", 1, False, False),
        (3, "tip", "assistant: left answer", 1, False, False),
        (4, "branch_summary", "branch summary: tried left", 1, True, False),
        (5, "user", "right", 1, True, False),
        (6, "compaction", "compaction of 1,234 tokens", 1, True, True),
    ]


def test_a_user_message_lands_on_its_parent_and_anything_else_on_itself() -> None:
    entries = chain(user("q"), assistant("a"))
    assert landing(entries[0]) == landing(entries[0]).__class__(None, "q")
    assert landing(entries[1]).position == "test-id-1" and landing(entries[1]).resend_text is None


def test_a_copied_branch_keeps_its_labels_at_the_end_and_stays_chained() -> None:
    entries = chain(user("q"), label("test-id-0", "start"), assistant("a"), label("test-id-2", None))
    copied = branch_copy({e["id"]: e for e in entries}, "test-id-3")
    assert [(e["type"], e["parentId"]) for e in copied] == [
        ("message", None), ("message", "test-id-0"), ("label", "test-id-2")]
    assert copied[-1]["targetId"] == "test-id-0" and copied[-1]["label"] == "start"


def test_a_branch_summary_leaves_tool_results_out_and_takes_the_newest_within_budget() -> None:
    entries = chain(user("old " * 100), assistant("x"), {"role": "toolResult", "toolCallId": "c", "toolName": "bash",
                    "content": [{"type": "text", "text": "out"}], "isError": False, "timestamp": 0}, user("new"))
    messages, _ = prepare_branch(entries, 10, estimate_tokens_chars4)
    assert [m["role"] for m in messages] == ["assistant", "user"]
    assert prepare_branch([], 0, estimate_tokens_chars4)[0] == [] and NO_CONTENT == "No content to summarize"
