"""``/uncompact`` and ``pi-compact uncompact``: the context before the latest compaction comes back, for us
and for pi's own reader, and nothing in the file is deleted or rewritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_harness import WINDOW, Harness, make_harness, padded, summary_reply, two_finished_turns
from pi_session import pi_view
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.compaction.navigator import Navigator
from pi_compact.errors import CompactionError
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings

CLI = Path(sys.executable).with_name("pi-compact")


def our_context(path: Path) -> list[dict[str, Any]]:
    return [dict(m) for m in SessionStore.open(path, str(path.parent), 0).context().messages]


def chained(h: Harness, compactions: int) -> bytes:
    """Run ``compactions`` manual compactions, each after new turns; the file's bytes before the last."""
    before = b""
    for number in range(compactions):
        if number == 0:
            two_finished_turns(h)
        else:
            h.server.enqueue(Reply(text=padded(f"ANSWER-{number}"), prompt_tokens=1_000))
            h.session.prompt(padded(f"QUESTION-{number}"))
        before = h.path.read_bytes()
        h.server.enqueue(summary_reply())
        assert h.session.compact() is not None
    return before


def uncompact(path: Path, **options: Any) -> Any:
    store = SessionStore.open(path, str(path.parent), 0)
    return Navigator(store, None, Settings()).uncompact(**options)


@pytest.mark.parametrize("compactions", [1, 2, 3])
def test_uncompact_restores_the_context_before_the_latest_of_chained_compactions(
    scripted_server: ScriptedServer, tmp_path: Path, compactions: int
) -> None:
    h = make_harness(scripted_server, tmp_path)
    snapshot = tmp_path / "before.jsonl"
    snapshot.write_bytes(chained(h, compactions))
    expected = our_context(snapshot)
    compacted = h.path.read_bytes()
    assert our_context(h.path) != expected  # the compaction did change the context

    outcome = uncompact(h.path, context_window=WINDOW)

    after = h.path.read_bytes()
    assert after.startswith(compacted) and after.count(b"\n") == compacted.count(b"\n") + 1  # one line added
    assert our_context(h.path) == expected
    theirs = pi_view(h.path, tmp_path)
    assert theirs["messages"] == pi_view(snapshot, tmp_path)["messages"] == expected
    last = json.loads(after.splitlines()[-1])
    assert theirs["leafId"] == last["id"]  # pi opens at the entry we wrote: the move survives a resume
    assert (last["type"], last["customType"], last["data"]["compactionId"]) == (
        "custom", "pi-compact.uncompact", outcome.compaction_id)
    assert last["parentId"] == json.loads(snapshot.read_bytes().splitlines()[-1])["id"]


def test_uncompact_refuses_a_context_that_no_longer_fits_the_window_unless_forced(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    chained(h, 1)
    before = h.path.read_bytes()
    with pytest.raises(CompactionError, match=r"no longer fits the 300-token window, so it was not restored"):
        uncompact(h.path, context_window=300)
    assert h.path.read_bytes() == before
    outcome = uncompact(h.path, context_window=300, force=True)
    assert outcome.tokens > 300 and outcome.over_threshold
    assert h.path.read_bytes() != before


def test_uncompact_refuses_to_drop_messages_written_after_the_compaction_unless_forced(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    chained(h, 1)
    scripted_server.enqueue(Reply(text="AFTER-ANSWER", prompt_tokens=1_000))
    h.session.prompt("AFTER-QUESTION")
    before = h.path.read_bytes()
    with pytest.raises(CompactionError, match=r"^2 messages came after compaction \w+; undoing it goes back"):
        uncompact(h.path, context_window=WINDOW)
    assert h.path.read_bytes() == before
    assert uncompact(h.path, context_window=WINDOW, force=True).left_behind == 2
    assert "AFTER-QUESTION" not in json.dumps(our_context(h.path))


def test_a_branch_without_compaction_has_nothing_to_uncompact(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    with pytest.raises(CompactionError, match=r"^Nothing to uncompact: the current branch has no compaction\.$"):
        uncompact(h.path, context_window=WINDOW)


def test_after_uncompact_the_agent_sends_the_full_history_again(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    chained(h, 1)
    Navigator(h.session.store, h.session.model, h.session.settings).uncompact()
    h.session.reload_context()
    scripted_server.enqueue(Reply(text="ok", prompt_tokens=1_000))
    h.session.prompt("and now?")
    sent = json.dumps(h.agent_requests()[-1]["messages"])
    assert "EARLY-QUESTION" in sent and "scripted summary line" not in sent


# ---- the command line ------------------------------------------------------------------------------


def run_cli(*args: str, cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PI_CODING_AGENT_DIR": str(cwd / "agent"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200", **extra_env}
    return subprocess.run([str(CLI), *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_the_uncompact_command_undoes_the_latest_compaction(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    snapshot = tmp_path / "before.jsonl"
    snapshot.write_bytes(chained(h, 2))
    done = run_cli("uncompact", str(h.path), "--context-window", str(WINDOW), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[uncompacted]" in done.stdout and "undone" in done.stdout
    assert our_context(h.path) == our_context(snapshot)


@pytest.mark.parametrize(("args", "code", "says"), [
    (["--context-window", "300"], 1, "no longer fits the 300-token window"),
    # With a provider key the embedded model is not the default, so no window is known (issue 35.7: without
    # one, uncompact takes the embedded model's window as compact does).
    ([], 2, "Pass --context-window N (or --model M)"),
])
def test_the_uncompact_command_refuses_with_one_sentence_and_leaves_the_file_unchanged(
    scripted_server: ScriptedServer, tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    h = make_harness(scripted_server, tmp_path)
    chained(h, 1)
    before = h.path.read_bytes()
    done = run_cli("uncompact", str(h.path), *args, cwd=tmp_path, OPENAI_API_KEY="sk-test")
    assert done.returncode == code
    assert done.stderr.startswith("pi-compact: ") and says in done.stderr and done.stderr.count("\n") == 1
    assert h.path.read_bytes() == before


def test_the_resume_banner_points_at_summary_only_while_the_branch_has_a_compaction(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from pi_compact.ui.status import compaction_banner

    h = make_harness(scripted_server, tmp_path)
    chained(h, 1)
    assert compaction_banner(h.session) == "Session compacted 1 time — /summary to read"
    h.session.uncompact(force=True)
    assert compaction_banner(h.session) == (
        "Session compacted 1 time, none on this branch (undone with /uncompact, or on another branch)")


def test_uncompact_force_says_which_pins_made_after_the_compaction_it_drops(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from rich.console import Console

    from pi_compact.ui.tree_view import uncompact_block

    h = make_harness(scripted_server, tmp_path)
    chained(h, 1)
    h.session.pin("Always run the linter before committing.")
    outcome = h.session.uncompact(force=True)
    assert outcome.dropped_pins == ("Always run the linter before committing.",)
    console = Console(record=True, width=200)
    console.print(uncompact_block(outcome))
    said = "1 pin made after it no longer applies: “Always run the linter before committing.” (/pin again to keep it)."
    assert said in " ".join(console.export_text().replace("│", " ").split())
