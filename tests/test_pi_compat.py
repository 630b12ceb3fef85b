"""Our compaction entries still open in pi: pi's own ``buildSessionContext`` (via node) sees what we see.

Runs only where ``node`` and the npm package @mariozechner/pi-coding-agent (0.73.1) resolve from the
project root (``npm install --no-save @mariozechner/pi-coding-agent@0.73.1``); skipped otherwise.
pi ignores ``retainedTail`` and rebuilds the kept region from ``firstKeptEntryId``; we read the
tail. Both must give the same messages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from builders import (
    assistant,
    branch_summary,
    chain,
    coding_session,
    compaction_settings,
    custom_message_entry,
    model_change,
    roles,
    run_compaction,
    sized,
    structured_summary,
    usage,
    user,
    write_session,
)
from scripted_server import Reply, ScriptedServer

from pi_compact.session.store import SessionStore

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "@mariozechner/pi-coding-agent"
# Loads a session file with pi's SessionManager and prints the context's messages as JSON.
PI_CONTEXT_SCRIPT = f"""
import {{ SessionManager }} from "{PACKAGE}";
const [file, dir] = process.argv.slice(1);
const context = SessionManager.open(file, dir).buildSessionContext();
process.stdout.write(JSON.stringify(context.messages));
"""


@lru_cache(maxsize=1)
def pi_unavailable() -> str | None:
    """Why pi cannot be run here, or None when it can."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    probe = subprocess.run(
        [node, "--input-type=module", "-e", f"console.log(import.meta.resolve('{PACKAGE}'))"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    if probe.returncode != 0:
        return f"{PACKAGE} is not installed (npm install --no-save {PACKAGE}@0.73.1 in {PROJECT_ROOT})"
    return None


@pytest.fixture
def pi_context(tmp_path: Path) -> Any:
    reason = pi_unavailable()
    if reason is not None:
        pytest.skip(reason)

    def read(path: Path) -> list[dict[str, Any]]:
        env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
        done = subprocess.run(
            ["node", "--input-type=module", "-e", PI_CONTEXT_SCRIPT, str(path), str(tmp_path)],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env,
        )
        assert done.returncode == 0, done.stderr
        messages: list[dict[str, Any]] = json.loads(done.stdout)
        return messages

    return read


def our_context(path: Path) -> list[dict[str, Any]]:
    return [dict(m) for m in SessionStore.open(path, str(path.parent), 0).context().messages]


def compact(path: Path, server: ScriptedServer, marker: str, **options: Any) -> None:
    server.enqueue(Reply(text=structured_summary(marker)))
    assert run_compaction(path, server.base_url, **options) is not None


@pytest.mark.parametrize("retain_tail", [True, False])
def test_pi_builds_the_same_context_from_our_compaction(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any, retain_tail: bool
) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    compact(path, scripted_server, "first", settings=compaction_settings(retain_tail=retain_tail))
    assert ("retainedTail" in json.loads(path.read_text().splitlines()[-1])) is retain_tail
    theirs = pi_context(path)
    assert roles(theirs) == ["compactionSummary", "user", "assistant"]
    assert theirs == our_context(path)


def test_pi_builds_the_same_context_after_two_compactions(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any
) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    compact(path, scripted_server, "first")
    store = SessionStore.open(path, str(path.parent), 0)
    store.append_message(user("Also update the changelog. " + sized(600)), 1)
    store.append_message(assistant("Changelog updated. " + sized(200), usage=usage(6000, 100)), 2)
    compact(path, scripted_server, "second")
    theirs = pi_context(path)
    assert roles(theirs)[0] == "compactionSummary" and theirs[0]["summary"].startswith(structured_summary("second"))
    assert theirs == our_context(path)


def test_pi_builds_the_same_context_when_the_kept_region_holds_other_entries(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any
) -> None:
    path = tmp_path / "session.jsonl"
    entries = chain(
        *coding_session()[:10],
        user("Run the tests and fix failures. " + sized(300)),  # test-id-10: the cut
        model_change("openai", "gpt-4o"),
        custom_message_entry("A note from an extension.", custom_type="note"),
        branch_summary(structured_summary("a side branch"), "test-id-9"),
        assistant("All 12 tests pass. " + sized(100), usage=usage(5000, 100)),
    )
    write_session(path, entries)
    compact(path, scripted_server, "first")
    theirs = pi_context(path)
    assert roles(theirs) == ["compactionSummary", "user", "custom", "branchSummary", "assistant"]
    ours = our_context(path)
    assert "details" not in ours[2]  # like pi, an absent ``details`` stays absent
    assert theirs == ours
