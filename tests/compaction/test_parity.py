"""Dry-run output equals pi 0.73.1's own plan on every reference session (both settings sets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures_path import needs_fixtures, parity_sessions

from pi_compact.compaction.serialize import serialize_message
from pi_compact.messages import to_llm_message
from pi_compact.session.entries import message_of_entry
from pi_compact.session.store import SessionStore

SETTINGS = {
    "keep20000": ("20000", "16384", "200000"),
    "keep2000": ("2000", "1000", "8000"),
}
# Blocks whose wrapper sentence each implementation words itself (fixtures README).
_OWN_WORDING_ROLES = {"bashExecution", "branchSummary"}


def _blocks(messages: Any) -> list[tuple[str, bool]]:
    blocks: list[tuple[str, bool]] = []
    for message in messages:
        converted = to_llm_message(message)
        if converted is None:
            continue
        own = message.get("role") in _OWN_WORDING_ROLES
        blocks.extend((part, own) for part in serialize_message(converted))
    return blocks


def assert_same_serialization(expected: str, blocks: list[tuple[str, bool]]) -> None:
    """Walk the reference text block by block: exact text, except own-wording blocks by tag only."""
    pos = 0
    for index, (text, own_wording) in enumerate(blocks):
        if index:
            assert expected[pos : pos + 2] == "\n\n", f"block {index}: no separator at {pos}"
            pos += 2
        if not own_wording:
            assert expected.startswith(text, pos), (
                f"block {index} differs:\nours: {text[:300]!r}\npi:   {expected[pos:pos + 300]!r}"
            )
            pos += len(text)
            continue
        tag = text.split(" ", 1)[0] + " "
        assert expected.startswith(tag, pos), f"block {index}: expected tag {tag!r} at {pos}"
        following = [t for t, own in blocks[index + 1 :] if not own]
        if index + 1 == len(blocks):
            pos = len(expected)
        elif not blocks[index + 1][1]:
            found = expected.find("\n\n" + following[0], pos)
            assert found >= 0, f"block {index + 1} not found after an own-wording block"
            pos = found
        else:
            found = expected.find("\n\n[", pos + len(tag))
            assert found >= 0
            pos = found
    assert pos == len(expected), f"reference has {len(expected) - pos} more characters"


def _run_dry_run(session: Path, keep: str, reserve: str, window: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "pi_compact", "compact", str(session), "--dry-run", "--json",
         "--keep-recent-tokens", keep, "--reserve-tokens", reserve, "--context-window", window,
         "--token-estimator", "chars4"],
        capture_output=True, text=True, check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


CASES = [(s, name) for s in parity_sessions() for name in SETTINGS]


@needs_fixtures
@pytest.mark.parametrize(("session", "setting"), CASES, ids=[f"{s.stem}-{n}" for s, n in CASES])
def test_dry_run_json_matches_pi(session: Path, setting: str) -> None:
    keep, reserve, window = SETTINGS[setting]
    expected = json.loads(session.with_name(f"{session.stem}.{setting}.json").read_text())
    ours = _run_dry_run(session, keep, reserve, window)

    assert set(ours) == set(expected)
    for key in ("context_tokens", "should_compact", "context_roles"):
        assert ours[key] == expected[key], key
    if expected["plan"] is None:
        assert ours["plan"] is None
        return
    assert set(ours["plan"]) == set(expected["plan"])
    for key, value in expected["plan"].items():
        if key != "serialized_history" and key != "serialized_turn_prefix":
            assert ours["plan"][key] == value, key

    store = SessionStore.open(session, "/", 0)
    by_id = store.by_id
    for key, ids_key in (("serialized_history", "summarize_entry_ids"),
                         ("serialized_turn_prefix", "turn_prefix_entry_ids")):
        messages = [message_of_entry(by_id[i]) for i in ours["plan"][ids_key]]
        blocks = _blocks(messages)
        assert_same_serialization(expected["plan"][key], blocks)
        assert_same_serialization(ours["plan"][key], blocks)
