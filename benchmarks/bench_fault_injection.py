"""Fault injection at scale: kill -9 the real CLI hundreds of times, plus full-disk rounds.

The long version of tests/project/test_fault_injection.py, with the same rounds (tests/fault_harness.py):
chains of print-mode tool loops (which write a user file and compact) and ``pi-compact compact`` runs
on one session each, every run killed with SIGKILL at a random point: after a random delay from the
first model request, or at the n-th observed write to the session or user file. Each chain ends with
two full-disk rounds (a file-size limit a little above the session's size): a turn, and a compaction.
After every round the session is reopened and checked. It prints:

    complete entries lost   entries that were complete on disk but are not on the reopened branch
    sessions unopenable     sessions SessionStore.open could not open
    user files truncated    times the file the agent rewrites held no whole version

Usage (from the project root; no network needed):

    .venv/bin/python benchmarks/bench_fault_injection.py                 # 200 kills, 2 at a time
    .venv/bin/python benchmarks/bench_fault_injection.py --kills 20 --json

Each run imports litellm (~4 s), so 200 kills take 15-30 minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fault_harness import (  # noqa: E402
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


class Tally:
    """Results of all chains (shared by the worker threads)."""

    def __init__(self, kills: int) -> None:
        self.wanted = kills
        self.lock = threading.Lock()
        self.killed: list[Verdict] = []
        self.unkilled = 0  # runs that finished before their kill
        self.full: list[tuple[int, Verdict]] = []  # (exit code, verdict) of the full-disk rounds
        self.problems: list[str] = []

    def more_kills_wanted(self) -> bool:
        with self.lock:
            return len(self.killed) < self.wanted

    def add(self, what: str, killed: bool, verdict: Verdict, exit_code: int | None = None) -> None:
        with self.lock:
            if exit_code is not None:
                self.full.append((exit_code, verdict))
            elif killed:
                self.killed.append(verdict)
            else:
                self.unkilled += 1
            if verdict.unopenable or verdict.lost or verdict.truncated or (exit_code is not None and verdict.torn):
                self.problems.append(f"{what}: {verdict}")


def chain(root: Path, seed: int, rounds: int, size: int, tally: Tally) -> None:
    rng = random.Random(seed)
    workspace = Workspace.make(root)
    seed_session(workspace, 2, size // 4, seed)
    for n in range(rounds):
        if not tally.more_kills_wanted():
            break
        if n % 3 == 2:
            server = compact_server(seed + n, size)
            command = compact_command(workspace, server)
            kill = Kill(writes=1) if rng.random() < 0.5 else Kill(delay_s=rng.uniform(0, 0.8))
        else:
            server = agent_server(workspace, seed + n, size)
            command, kill = agent_command(workspace, server), Kill.random(rng, 1.5)
        try:
            done = run(command, workspace, server, kill)
        finally:
            server.stop()
        tally.add(f"seed {seed} round {n} {kill}", done.killed, verify(workspace))
    for kind in ("agent", "compact"):
        limit = workspace.session.stat().st_size + rng.randint(1, size)
        server = agent_server(workspace, seed + 100, size) if kind == "agent" else compact_server(seed + 101, size)
        command = agent_command(workspace, server) if kind == "agent" else compact_command(workspace, server)
        try:
            done = run(command, workspace, server, preexec=file_size_limit(limit))
        finally:
            server.stop()
        tally.add(f"seed {seed} full disk ({kind}, limit {limit})", False, verify(workspace), done.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="SIGKILLs to land (default 200)")
    parser.add_argument("--parallel", type=int, default=2, help="chains run side by side (default 2)")
    parser.add_argument("--rounds", type=int, default=6, help="killed rounds per session (default 6)")
    parser.add_argument("--size", type=int, default=500_000, help="bytes of text per large entry")
    parser.add_argument("--seed", type=int, default=None, help="first chain's seed (default: random)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args()
    first_seed = options.seed if options.seed is not None else random.randrange(1_000_000)
    tally = Tally(options.kills)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pi-compact-faults-") as scratch:

        def worker(index: int) -> None:
            number = 0
            while tally.more_kills_wanted():
                seed = first_seed + index * 1_000_000 + number * 1_000  # distinct per worker and chain
                try:
                    chain(Path(scratch) / f"{index}-{number}", seed, options.rounds, options.size, tally)
                except Exception as exc:  # noqa: BLE001 - reported with the figures, the other chains go on
                    with tally.lock:
                        tally.problems.append(f"seed {seed}: the chain stopped: {type(exc).__name__}: {exc}")
                number += 1

        with ThreadPoolExecutor(options.parallel) as pool:
            list(pool.map(worker, range(options.parallel)))
    figures: dict[str, Any] = {
        "kills": len(tally.killed),
        "kills that tore a line": sum(v.torn for v in tally.killed),
        "runs that ended before their kill": tally.unkilled,
        "complete entries lost": sum(v.lost for v in tally.killed) + sum(v.lost for _, v in tally.full),
        "sessions unopenable": sum(v.unopenable for v in tally.killed) + sum(v.unopenable for _, v in tally.full),
        "user files truncated": sum(v.truncated for v in tally.killed) + sum(v.truncated for _, v in tally.full),
        "full-disk rounds": len(tally.full),
        "full-disk rounds that exited non-zero": sum(code != 0 for code, _ in tally.full),
        "full-disk rounds that left a torn line": sum(v.torn for _, v in tally.full),
        "first seed": first_seed,
        "minutes": round((time.monotonic() - started) / 60, 1),
    }
    if options.json:
        print(json.dumps({**figures, "problems": tally.problems}, indent=2))
        return
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    for problem in tally.problems:
        print(f"  {problem}")


if __name__ == "__main__":
    main()
