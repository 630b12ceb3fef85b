"""Pinned context: ``/pin``, ``/pins``, ``/unpin``; pins reach the model verbatim through any number of
compactions, survive resume, count in ``/context``, warn over their budget, and pi tolerates them."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from builders import chain, custom_entry, user
from pi_session import pi_view
from ui_harness import SETTINGS, FakeModel, chat, make_state, squeeze

from pi_compact.session.lazy import EntryIndex, customs_on_path
from pi_compact.session.pins import PIN_TYPE, UNPIN_TYPE, PinTracker, fold_pins, pinned_block, with_pins
from pi_compact.session.store import SessionStore
from pi_compact.ui.commands import dispatch


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with the settings of ``test_ui_slash`` (window 8,000 with the fake model)."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "project" / ".pi").mkdir(parents=True)
    (tmp_path / "project" / ".pi" / "settings.json").write_text(json.dumps(SETTINGS))
    return tmp_path / "project"


NOTE = "Never touch `src/legacy/` — it ships to the bank.\n  Keep  exact   spacing: ünïcödé, 日本語, 😀 ✓"


def test_a_pin_reaches_the_model_verbatim_after_the_system_prompt(project: Path) -> None:
    model = FakeModel()
    state, buffer = make_state(project, model)
    chat(state, "before the pin")
    unpinned = model.requests[-1].system
    dispatch(state, f"/pin {NOTE}")
    chat(state, "hello")
    system = model.requests[-1].system
    assert "<pin" not in unpinned
    assert system.startswith(unpinned)
    assert f'<pin n="1">\n{NOTE}\n</pin>' in system
    assert "Pinned as pin 1" in buffer.getvalue()


def test_pin_alone_pins_the_last_user_message(project: Path) -> None:
    model = FakeModel()
    state, _ = make_state(project, model)
    chat(state, "Always answer in French.", "ok")
    dispatch(state, "/pin")
    pins = fold_pins(state.session.store.branch())
    assert [pin.text for pin in pins] == ["ok"]
    assert pins[0].source_id == state.session.store.branch()[-3]["id"]  # the "ok" prompt, before its answer


def test_pins_are_byte_identical_after_ten_chained_compactions(project: Path) -> None:
    model = FakeModel(*[f"answer {n} " * 80 for n in range(40)])
    state, _ = make_state(project, model)
    dispatch(state, f"/pin {NOTE}")
    dispatch(state, "/pin second note")
    expected = f'<pin n="1">\n{NOTE}\n</pin>\n<pin n="2">\nsecond note\n</pin>'
    for round_ in range(10):
        chat(state, f"question {round_} " * 60, f"more {round_} " * 60)
        dispatch(state, "/compact")
    assert state.session.compactions == 10
    chat(state, "and now?")
    request = model.requests[-1]
    assert request.messages[0]["content"][0]["text"].startswith("Earlier parts of this conversation were compacted")
    assert request.system.endswith(expected + "\n</pinned-notes>")
    assert request.system.encode("utf-8").count(NOTE.encode("utf-8")) == 1


def test_pins_survive_resume(project: Path) -> None:
    state, _ = make_state(project, FakeModel())
    dispatch(state, f"/pin {NOTE}")
    chat(state, "hello")
    state.session.store.close()
    reopened = SessionStore.open(project / "s.jsonl", str(project), 0)
    assert [pin.text for pin in fold_pins(reopened.branch())] == [NOTE]


def test_pins_older_than_the_last_compaction_survive_resume_without_a_full_read(project: Path) -> None:
    model = FakeModel(*[f"answer {n} " * 80 for n in range(20)])
    state, _ = make_state(project, model)
    dispatch(state, f"/pin {NOTE}")
    dispatch(state, "/pin dropped later")
    dispatch(state, "/pin third note")
    dispatch(state, "/unpin 2")
    pin_ids = [e["id"] for e in state.session.store.branch() if e.get("type") == "custom"]
    for round_ in range(3):
        chat(state, f"question {round_} " * 60, f"more {round_} " * 60)
        dispatch(state, "/compact")
    assert state.session.compactions == 3
    state.session.store.close()

    reads = EntryIndex.full_reads
    resumed, _ = make_state(project, model)
    tail_ids = {e["id"] for e in resumed.session.store.branch_tail()}
    assert len(pin_ids) == 4 and not tail_ids & set(pin_ids)  # all pin entries lie before the tail
    chat(resumed, "and now?")
    expected = f'<pin n="1">\n{NOTE}\n</pin>\n<pin n="2">\nthird note\n</pin>'
    assert model.requests[-1].system.endswith(expected + "\n</pinned-notes>")
    assert EntryIndex.full_reads == reads  # the first request of the resumed session read no old entries
    resumed.session.store.entries  # noqa: B018 - the counter does see a full read
    assert EntryIndex.full_reads == reads + 1


def test_pins_lists_them_numbered_with_sizes_and_unpin_removes_one(project: Path) -> None:
    model = FakeModel()
    state, buffer = make_state(project, model)
    dispatch(state, "/pin first note")
    dispatch(state, "/pin " + "second " * 40)
    dispatch(state, "/pins")
    out = squeeze(buffer)
    assert "1 ~3 tokens first note" in out and "2 ~70 tokens second second" in out
    assert "2 pins, ~73 tokens; budget 1,200 (compaction.pinBudget)." in out
    dispatch(state, "/unpin 1")
    chat(state, "hello")
    assert "first note" not in model.requests[-1].system and "second second" in model.requests[-1].system
    dispatch(state, "/unpin 5")
    assert "/unpin takes a number from 1 to 1, got '5'." in buffer.getvalue()


def test_pins_over_the_budget_warn_naming_the_biggest_and_compaction_still_succeeds(project: Path) -> None:
    settings = {"compaction": {"reserveTokens": 2000, "keepRecentTokens": 50, "pinBudget": 100}}
    (project / ".pi" / "settings.json").write_text(json.dumps(settings))
    state, buffer = make_state(project, FakeModel("a " * 300, "b " * 300))
    dispatch(state, "/pin small note")
    dispatch(state, "/pin " + "huge " * 100)
    warning = ("Pinned notes take about 185 tokens, over the pin budget of 100 (compaction.pinBudget); the biggest "
               'is pin 2 (~125 tokens, "huge huge huge')
    assert warning in squeeze(buffer)
    chat(state, "one " * 100, "two " * 100)
    buffer.truncate(0)
    buffer.seek(0)
    dispatch(state, "/compact")
    assert state.session.compactions == 1
    assert warning in squeeze(buffer)


def test_context_counts_pins_in_its_breakdown(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/pin " + "note " * 20)
    chat(state, "hello")
    dispatch(state, "/context")
    out = squeeze(buffer)
    assert "· system prompt, tools and pins ~" in out and "(pins ~" in out and "(1)" in out  # pins are in it
    assert "Pins 1 pinned, ~" in out and "tokens after the system prompt · budget 1,200 (compaction.pinBudget)" in out


def test_pin_entries_are_custom_entries_pi_reads_and_leaves_out_of_the_context(project: Path, tmp_path: Path) -> None:
    state, _ = make_state(project, FakeModel())
    chat(state, "hello")
    dispatch(state, f"/pin {NOTE}")
    dispatch(state, "/pin other")
    dispatch(state, "/unpin 2")
    chat(state, "again")
    path = project / "s.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    pins = [line for line in lines if line.get("type") == "custom"]
    assert [p["customType"] for p in pins] == [PIN_TYPE, PIN_TYPE, UNPIN_TYPE]
    assert pins[0]["data"] == {"text": NOTE}
    theirs = pi_view(path, tmp_path)
    assert theirs["parsed"] == len(lines)  # pi's parser keeps every line, pins included
    ours = [dict(m) for m in SessionStore.open(path, str(project), 0).context().messages]
    assert theirs["messages"] == ours and NOTE not in json.dumps(ours)


def test_pins_follow_the_branch_and_the_tracker_follows_the_leaf() -> None:
    entries = chain(
        user("a"),
        custom_entry(PIN_TYPE, {"text": "on both"}),  # test-id-1
        user("b"),
        custom_entry(PIN_TYPE, {"text": "main only"}),  # test-id-3
        custom_entry(UNPIN_TYPE, {"pinId": "test-id-1"}),
        custom_entry(PIN_TYPE, {"text": ["not text"]}),  # a damaged pin is ignored
    )
    side = {"type": "message", "id": "side", "parentId": "test-id-1", "timestamp": "t", "message": user("c")}
    by_id = {e["id"]: e for e in [*entries, side]}
    walk = functools.partial(customs_on_path, by_id)
    tracker = PinTracker()
    assert [p.text for p in tracker.current(walk, "test-id-5")] == ["main only"]
    assert [p.text for p in tracker.current(walk, "side")] == ["on both"]
    assert [p.text for p in tracker.current(walk, "test-id-3")] == ["on both", "main only"]
    assert with_pins("SYSTEM", ()) == "SYSTEM"
    assert pinned_block(()) == ""
