"""How long automatic recall takes to choose its excerpts before a request (``recall.choose``), on the
worst case issue 44 brought up: many compacted ``read`` outputs of long numbered files, and a question
that names a number ("meeting 137") that every one of them holds in its line-number column.

``--reads N`` compacted reads of a ~40k-character NOTES.md-like file (each a little different, so none
count as copies), then the question; the median and worst of ``--runs`` calls are printed with the load
average. Run it against two checkouts (``PYTHONPATH=<checkout>``) to compare the code before and after.

Usage: ``python benchmarks/bench_auto_recall.py [--reads 64] [--runs 7] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from pi_compact.agent.compaction.recall import choose

ROUTINE = ("- Discussed moving logs to the new bucket.", "- Reviewed the on-call rota for the next two weeks.",
           "- Agreed to keep the nightly build green before merging.", "- Went through the support queue.",
           "- Checked the disk usage of the build machines.")


def numbered_notes(variant: int) -> str:
    """A ``read`` output of ~40k characters: a line-number column, meetings 1-146, a codename at 137."""
    lines = ["# Team meeting notes", "", f"Copy {variant}."]
    for number in range(1, 147):
        lines += [f"## Meeting {number}", *(ROUTINE[(number + k) % 5] for k in range(5))]
        if number == 137:
            lines.append(f"- Decided the release codename: KITE-{variant}.")
        lines.append("")
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=1))


def _message(role: str, text: str) -> dict[str, Any]:
    extra = {"toolCallId": "r", "toolName": "read", "isError": False} if role == "toolResult" else {}
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 0, **extra}


def branch(reads: int) -> list[dict[str, Any]]:
    turns = []
    for variant in range(reads):
        turns += [("user", f"Read the notes, copy {variant}."), ("toolResult", numbered_notes(variant))]
    turns.append(("user", "Thanks."))
    entries: list[dict[str, Any]] = []
    for index, (role, text) in enumerate(turns):
        entries.append({"type": "message", "id": f"e{index}", "parentId": entries[-1]["id"] if entries else None,
                        "message": _message(role, text)})
    kept = entries[-1]["id"]
    entries.append({"type": "compaction", "id": "c1", "parentId": kept, "firstKeptEntryId": kept,
                    "summary": "## Goal\n- notes", "tokensBefore": 0})
    return entries


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=64)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    entries = branch(args.reads)
    live = [{"role": "compactionSummary", "summary": "## Goal\n- notes", "tokensBefore": 0, "timestamp": 0},
            _message("user", "Thanks."), _message("user", "What was the release codename decided at meeting 137?")]
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        found = choose(entries, live, 1000, "chars4")
        times.append(time.perf_counter() - started)
    report = {"reads": args.reads, "runs": args.runs, "median_s": round(statistics.median(times), 4),
              "worst_s": round(max(times), 4), "excerpts": len(found), "load": os.getloadavg()[0]}
    print(json.dumps(report) if args.json else
          f"{args.reads} reads: median {report['median_s']} s, worst {report['worst_s']} s, "
          f"{report['excerpts']} excerpts (load {report['load']:.1f})")


if __name__ == "__main__":
    main()
