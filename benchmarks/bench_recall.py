"""How fast ``recall`` answers on a 100 MB session (target: under 1 s per call).

The session is the generated "realistic" 100 MB file of ``make_session.py`` (94k entries, a compaction
every 750 KB, so almost all of the current branch is behind the latest compaction). It is opened once,
as a live session holds it; opening is timed separately, because a live session has already paid it.
Two needles are then planted in memory (the file is never changed): one in the oldest user message of
the branch and one in the newest message behind the compaction. Each case calls the real tool
(``RecallTool.run``: branch walk, search, excerpts, token cap) several times; medians and worst runs
are printed. The very first call also builds the tool's text index (the lower-cased text of every
message, kept and extended afterwards), so it is timed on its own first.

Worst cases are the ones that must read the whole compacted branch: a needle in the oldest message,
and queries that match nothing. A query whose words are everywhere stops early (newest first).

Usage: ``python benchmarks/bench_recall.py [--mb 100] [--runs 7] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_session import cached_session  # noqa: E402 - the benchmarks folder is not a package

from pi_compact.agent.tools import ToolContext  # noqa: E402
from pi_compact.agent.tools.recall import RecallTool  # noqa: E402
from pi_compact.session.history import hidden_end, walk  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402

TARGET_S = 1.0


def plant(entry: dict[str, Any], text: str) -> None:
    """Append ``text`` to the message of ``entry`` (in memory only)."""
    content = entry["message"]["content"]
    if isinstance(content, str):
        entry["message"]["content"] = content + " " + text
    else:
        content.append({"type": "text", "text": text})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()

    path = cached_session(options.mb)
    started = time.perf_counter()
    store = SessionStore.open(path, str(path.parent), 0)
    open_s = time.perf_counter() - started
    branch = walk(store.by_id, store.leaf_id)
    hidden = branch[: hidden_end(branch)]
    messages = [e for e in hidden if e.get("type") == "message"]
    oldest = next(e for e in messages if e["message"].get("role") == "user")
    plant(oldest, "The release codename is QUOKKA-ORBIT-7741.")
    plant(messages[-1], "The rollback window is 37 minutes.")

    tool = RecallTool(store)
    context = ToolContext(Path("."))
    cases: list[tuple[str, dict[str, Any]]] = [
        ("words, needle in the oldest message", {"query": "quokka orbit codename"}),
        ("words, needle in the newest compacted message", {"query": "rollback window minutes"}),
        ("words, no match", {"query": "xylophone zeppelin"}),
        ("words found everywhere (stops early)", {"query": "session compaction"}),
        ("regex with a literal, needle in the oldest", {"query": r"QUOKKA-\w+-\d{4}"}),
        ("regex with a literal, no match", {"query": r"zeppelin\s+\d+"}),
        ("regex without a literal, no match", {"query": r"\d{7}[A-Z]{3}"}),
        ("entry_id of the oldest message", {"entry_id": oldest["id"]}),
        ("scope session, needle in the oldest", {"query": "quokka orbit", "scope": "session"}),
    ]
    started = time.perf_counter()
    cold = tool.run(cases[0][1], context)
    rows = [{"case": "first call (also indexes the text of every message)", "median_s": time.perf_counter() - started,
             "max_s": time.perf_counter() - started, "error": cold.is_error,
             "needle_found": "QUOKKA-ORBIT-7741" in cold.text}]
    for name, args in cases:
        times = []
        output = None
        for _ in range(options.runs):
            started = time.perf_counter()
            output = tool.run(args, context)
            times.append(time.perf_counter() - started)
        assert output is not None
        found = "QUOKKA-ORBIT-7741" in output.text or "37 minutes" in output.text
        rows.append({"case": name, "median_s": statistics.median(times), "max_s": max(times),
                     "error": output.is_error, "needle_found": found})

    load = os.getloadavg()[0]
    if options.json:
        print(json.dumps({"file": str(path), "mb": options.mb, "open_s": open_s, "branch_entries": len(branch),
                          "compacted_entries": len(hidden), "load": load, "cases": rows}, indent=2))
    else:
        print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB, {len(store.entries):,} entries, "
              f"{len(branch):,} on the branch, {len(hidden):,} behind the latest compaction")
        print(f"opening the session (not part of a recall): {open_s:.2f} s; load average {load:.2f}")
        print(f"{'case':52} {'median':>8} {'worst':>8}  result")
        for row in rows:
            result = "error text" if row["error"] else ("needle found" if row["needle_found"] else "matches")
            ok = "ok" if row["max_s"] < TARGET_S else "OVER"
            print(f"{row['case']:52} {row['median_s']:7.3f}s {row['max_s']:7.3f}s  {result} ({ok})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
