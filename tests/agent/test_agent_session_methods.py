"""``AgentSession``'s tree, pin and name methods: each writes one entry, and the live context follows."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_harness import check_created_harnesses, make_model_harness

from pi_compact.agent.events import TreeEnd, TreeStart
from pi_compact.errors import CompactionError
from pi_compact.llm.scripted import ScriptedReply
from pi_compact.session.tree import session_name


@pytest.fixture(autouse=True)
def _paired() -> None:
    yield
    check_created_harnesses()


def test_rename_writes_one_name_entry_and_returns_the_name(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, ScriptedReply(text="hi"))
    h.session.prompt("hello")
    before = len(h.session.store.entries)
    assert h.session.rename("my  work") == "my work"
    assert len(h.session.store.entries) == before + 1
    assert session_name(h.session.store.entries) == "my work"


def test_pin_without_text_pins_the_last_user_message_and_unpin_removes_it(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, ScriptedReply(text="hi"))
    assert h.session.pin() is None  # nothing of the user's yet
    h.session.prompt("keep this rule")
    pins = h.session.pin()
    assert pins is not None and [p.text for p in pins] == ["keep this rule"]
    h.session.unpin(pins[0])
    assert h.session.pin("note") is not None and [p.text for p in h.session.pin("n2") or ()] == ["note", "n2"]


def test_navigate_emits_tree_events_through_the_session_and_reloads_the_context(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, ScriptedReply(text="one"), ScriptedReply(text="two"))
    h.session.prompt("first")
    first_leaf = h.session.store.leaf_id
    h.session.prompt("second")
    assert first_leaf is not None
    outcome = h.session.navigate(first_leaf)
    assert outcome is not None
    assert [type(e) for e in h.events if isinstance(e, (TreeStart, TreeEnd))] == [TreeStart, TreeEnd]
    assert "second" not in str(h.session.messages)


def test_uncompact_without_a_compaction_refuses_and_writes_nothing(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, ScriptedReply(text="hi"))
    h.session.prompt("hello")
    before = len(h.session.store.entries)
    with pytest.raises(CompactionError, match="Nothing to uncompact"):
        h.session.uncompact()
    assert len(h.session.store.entries) == before
