"""Golden values on pi's real sessions (spec §3.16), and v1 vs pi-migrated v3 giving the same plan.

Skipped when the shared fixtures are absent (``needs_fixtures``).
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest
from fixtures_path import FIXTURES, needs_fixtures

from pi_compact.compaction.cut import CutPoint, find_cut_point
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.serialize import serialize_conversation
from pi_compact.messages import convert_to_llm
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings

pytestmark = needs_fixtures


@cache
def _store(name: str) -> SessionStore:
    store = SessionStore.open(FIXTURES / name, "/", 0)  # opening never writes
    # A v1 file's only warning says where its original will be kept when it is first saved (never here).
    assert [w for w in store.warnings if "is a version 1 pi session" not in w] == []
    return store


def _plan(name: str, keep: int) -> CompactionPlan:
    store = _store(name)
    settings = CompactionSettings(keep_recent_tokens=keep, token_estimator="chars4")
    plan = prepare_compaction(store.branch(), settings)
    assert plan is not None
    return plan


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        (20000, CutPoint(837, 834, True)),
        (1, CutPoint(1017, 986, True)),
        (1000, CutPoint(1011, 986, True)),
        (5000, CutPoint(983, 978, True)),
        (50000, CutPoint(394, 387, True)),
        (200000, CutPoint(0, -1, False)),
    ],
)
def test_large_session_cut_points_match_golden_values(keep: int, expected: CutPoint) -> None:
    entries = _store("pi-large-session.jsonl").entries
    assert len(entries) == 1018
    assert find_cut_point(entries, 0, len(entries), keep) == expected


def test_large_session_default_cut_lands_on_assistant_message() -> None:
    entry = _store("pi-large-session.jsonl").entries[837]
    assert entry["type"] == "message" and entry["message"]["role"] == "assistant"


def test_large_session_context_has_914_messages() -> None:
    context = _store("pi-large-session.jsonl").context()
    assert len(context.messages) == 914
    assert Counter(m["role"] for m in context.messages) == {"user": 88, "assistant": 453, "toolResult": 373}
    assert context.model == ("anthropic", "claude-sonnet-4-5")


def test_large_session_plan_matches_golden_values() -> None:
    plan = _plan("pi-large-session.jsonl", 20000)
    assert (plan.first_kept_entry_index, plan.is_split_turn, plan.tokens_before) == (837, True, 177657)
    assert (len(plan.messages_to_summarize), len(plan.turn_prefix_messages)) == (730, 3)
    assert plan.previous_summary is None


def test_before_compaction_context_starts_from_latest_summary() -> None:
    context = _store("pi-before-compaction.jsonl").context()
    assert len(context.messages) == 446
    assert Counter(m["role"] for m in context.messages) == {
        "compactionSummary": 1,
        "user": 31,
        "assistant": 219,
        "toolResult": 192,
        "bashExecution": 3,
    }
    assert context.messages[0]["role"] == "compactionSummary"
    assert context.messages[0]["tokensBefore"] == 185014


def _comparable(plan: CompactionPlan) -> tuple[object, ...]:
    """Everything of a plan except entry ids."""
    return (
        plan.first_kept_entry_index,
        plan.is_split_turn,
        plan.tokens_before,
        len(plan.messages_to_summarize),
        len(plan.turn_prefix_messages),
        len(plan.kept_messages),
        plan.previous_summary,
        plan.read_files,
        plan.modified_files,
        serialize_conversation(convert_to_llm(plan.messages_to_summarize)),
        serialize_conversation(convert_to_llm(plan.turn_prefix_messages)),
    )


@pytest.mark.parametrize("name", ["pi-large-session", "pi-before-compaction"])
@pytest.mark.parametrize("keep", [20000, 2000])
def test_v1_file_plans_like_pi_migrated_v3_file(name: str, keep: int) -> None:
    ours = _plan(f"{name}.jsonl", keep)
    theirs = _plan(f"{name}.v3.jsonl", keep)
    assert _comparable(ours) == _comparable(theirs)
    # the same entries, under the ids each migration assigned
    to_v3 = {
        a["id"]: b["id"]
        for a, b in zip(_store(f"{name}.jsonl").entries, _store(f"{name}.v3.jsonl").entries, strict=True)
    }
    assert to_v3[ours.first_kept_entry_id] == theirs.first_kept_entry_id
    assert tuple(to_v3[i] for i in ours.summarize_entry_ids) == theirs.summarize_entry_ids
    assert tuple(to_v3[i] for i in ours.turn_prefix_entry_ids) == theirs.turn_prefix_entry_ids

