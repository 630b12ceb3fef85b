"""Fault injection against the real CLI (issue 8): kill -9 at random points of appends and compactions,
a full disk (a file-size limit), and a second writer. See fault_harness.py for what is checked.

Every run is a ``python -m pi_compact`` process that imports litellm (~4 s), so the counts are small:
ten kills in two chains run side by side, then one process for each other case; the whole module
takes well under two minutes. benchmarks/bench_fault_injection.py runs the same rounds hundreds of
times. (Whether the ``write`` tool leaves a user file whole is reported there: it is the tools' part.)
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fault_harness import (
    Kill,
    Verdict,
    Workspace,
    agent_command,
    agent_server,
    compact_command,
    compact_server,
    file_size_limit,
    run,
    seed_session,
    verify,
)
from scripted_server import ScriptedServer

from pi_compact.session.store import SessionStore

SIZE = 200_000  # bytes of text per large entry


def _chain(root: Path, seed: int, rounds: int) -> list[tuple[str, Verdict]]:
    """Alternate agent turns and compactions on one session, each killed at a random point."""
    rng = random.Random(seed)
    workspace = Workspace.make(root)
    seed_session(workspace, 2, SIZE // 4, seed)
    verdicts: list[tuple[str, Verdict]] = []
    for n in range(rounds):
        if n % 3 == 2:
            server = compact_server(seed + n, SIZE)
            command, kill = compact_command(workspace, server), Kill(delay_s=rng.uniform(0, 0.8))
            if rng.random() < 0.5:
                kill = Kill(writes=1)
        else:
            server = agent_server(workspace, seed + n, SIZE)
            command, kill = agent_command(workspace, server), Kill.random(rng, 1.5)
        try:
            done = run(command, workspace, server, kill)
        finally:
            server.stop()
        verdicts.append((f"seed {seed} round {n} {kill} killed={done.killed} exit={done.returncode}",
                         verify(workspace)))
    return verdicts


def test_kill_9_at_random_points_loses_no_entry_and_leaves_every_session_openable(tmp_path: Path) -> None:
    seeds = [random.randrange(1_000_000) for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        chains = list(pool.map(lambda s: _chain(tmp_path / str(s), s, 5), seeds))
    rounds = [item for chain in chains for item in chain]
    bad = [f"{what}: {verdict}" for what, verdict in rounds if verdict.unopenable or verdict.lost]
    assert bad == [], "\n".join(bad)
    assert len(rounds) == 10


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    workspace = Workspace.make(tmp_path)
    seed_session(workspace, 2, SIZE // 4, 1)
    return workspace


def test_a_full_disk_fails_the_turn_in_one_line_and_leaves_no_torn_line(workspace: Workspace) -> None:
    size = workspace.session.stat().st_size
    server = agent_server(workspace, 2, SIZE)
    try:
        done = run(agent_command(workspace, server), workspace, server, preexec=file_size_limit(size + 1_000))
    finally:
        server.stop()
    assert done.returncode != 0
    assert done.stderr == (
        f"pi-compact: Could not save to {workspace.session} (File too large), so the newest message was not "
        "saved; the file is as it was before, so nothing saved earlier was lost.\n"
    )
    verdict = verify(workspace)
    assert (verdict.unopenable, verdict.lost, verdict.torn, verdict.skipped) == (False, 0, False, 0)


def test_compact_on_a_full_disk_exits_non_zero_and_leaves_the_file_byte_identical(workspace: Workspace) -> None:
    before = workspace.session.read_bytes()
    server = compact_server(3, SIZE)
    try:
        done = run(compact_command(workspace, server), workspace, server,
                   preexec=file_size_limit(len(before) + 5_000))
    finally:
        server.stop()
    assert done.returncode == 1
    assert "Compaction failed: Could not save to" in " ".join(done.stdout.split())
    assert workspace.session.read_bytes() == before


def _wait_for_request(server: ScriptedServer, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.requests, "the live session never called the model"


def test_compact_refuses_a_session_that_a_live_session_holds(workspace: Workspace) -> None:
    live_server = agent_server(workspace, 4, 1_000, delay_s=4)
    other_server = compact_server(5, 1_000)
    live = subprocess.Popen(agent_command(workspace, live_server), cwd=workspace.root / "proj",
                            env=workspace.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_request(live_server)
        before = workspace.session.read_bytes()
        refused = run(compact_command(workspace, other_server), workspace, other_server)
        assert refused.returncode == 2
        assert refused.stderr == (
            f"pi-compact: Session file {workspace.session} is in use by pi-compact (pid {live.pid}); finish or "
            "close that session first, then try again.\n"
        )
        assert workspace.session.read_bytes() == before
        assert other_server.requests == []
        out, err = live.communicate(timeout=120)
    finally:
        if live.poll() is None:
            live.kill()
            live.communicate()
        live_server.stop()
        other_server.stop()
    assert live.returncode == 0, err
    verdict = verify(workspace)
    assert (verdict.lost, verdict.skipped) == (0, 0)
    assert sorted(p.name for p in workspace.root.iterdir()) == ["agent", "proj", "session.jsonl"]  # lock gone


def test_an_append_by_another_program_mid_turn_fails_the_turn_instead_of_orphaning_it(
    workspace: Workspace,
) -> None:
    server = agent_server(workspace, 6, 1_000, delay_s=3)
    live = subprocess.Popen(agent_command(workspace, server), cwd=workspace.root / "proj", env=workspace.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_request(server)
        leaf = SessionStore.open(workspace.session, "/", 0).leaf_id
        theirs = {"type": "message", "id": "from-pi", "parentId": leaf, "timestamp": "2026-01-01T00:00:00.000Z",
                  "message": {"role": "user", "content": "typed in pi meanwhile", "timestamp": 1}}
        with open(workspace.session, "a", encoding="utf-8") as other:
            other.write(json.dumps(theirs) + "\n")
        after_theirs = workspace.session.read_bytes()
        out, err = live.communicate(timeout=120)
    finally:
        if live.poll() is None:
            live.kill()
            live.communicate()
        server.stop()
    assert live.returncode != 0
    assert f"{workspace.session} was changed by another program since pi-compact read it" in err
    assert workspace.session.read_bytes() == after_theirs
    reopened = SessionStore.open(workspace.session, "/", 0)
    assert reopened.leaf_id == "from-pi"
    assert verify(workspace).lost == 0


@pytest.mark.parametrize("start", ["missing", "v1"])
def test_two_sessions_started_on_one_file_write_one_header_and_the_second_is_told_why(
    tmp_path: Path, start: str
) -> None:
    workspace = Workspace.make(tmp_path)
    if start == "v1":
        lines = [{"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"},
                 {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "hi", "timestamp": 1}}]
        workspace.session.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    servers = [agent_server(workspace, 7 + n, 1_000) for n in range(2)]
    try:
        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda s: run(agent_command(workspace, s), workspace, s), servers))
    finally:
        for server in servers:
            server.stop()
    codes = sorted(done.returncode for done in runs)
    refused = [done for done in runs if done.returncode != 0]
    # Each holds the file from opening it; the second waits two seconds, then gives up (the first is
    # still importing litellm then), or, on a very slow machine, opens the file the first has finished.
    assert codes in ([0, 2], [0, 0]), [done.stderr for done in runs]
    for done in refused:
        assert "is in use by pi-compact (pid " in done.stderr
    headers = [line for line in workspace.session.read_text(encoding="utf-8").splitlines()
               if json.loads(line)["type"] == "session"]
    assert len(headers) == 1
    assert verify(workspace).lost == 0
