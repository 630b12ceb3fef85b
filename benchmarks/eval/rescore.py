"""Score an eval run's kept summaries again, three ways, without asking any model.

For each transcript and agent of the given results directories (``run_eval.py --results``), the raw
``summary.md`` is scored (1) as the run scored it: the model's prose, file lists removed; (2) whole, as
the next model reads it, ``<read-files>``/``<modified-files>`` included (where shell-written files go);
and, for ``ours``, (3) whole after this tree's deterministic additions (``compaction.kept``: the tagged
blocks after the prose) are applied to that same summary with the messages before the run's cut. (3) is what this tree
would have written from the same model answer: the additions never change the summarizer's request.
Probes are not re-asked: their numbers stay the run's.

    .venv/bin/python benchmarks/eval/rescore.py /work/notes/eval-r4/run1 /work/notes/eval-r4/run2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from scoring import Rules, facts_kept, facts_kept_whole, load_rules  # noqa: E402

from pi_compact.compaction.kept import keep, with_blocks  # noqa: E402
from pi_compact.compaction.kept.blocks import block_lines  # noqa: E402

# The window the eval's summaries were made for (the embedded model's): the blocks' budgets scale with it.
EVAL_WINDOW = 16_384


def messages_before(rules: Rules, first_kept: str) -> list[dict[str, Any]]:
    """The transcript's messages before the entry the run kept first (what its summary covered)."""
    found: list[dict[str, Any]] = []
    for line in rules.transcript.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("id") == first_kept:
            break
        if isinstance(entry.get("message"), dict):
            found.append(entry["message"])
    return found


def with_additions(summary: str, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``summary`` with this tree's deterministic additions, as the summarizer applies them; the records."""
    plan: Any = SimpleNamespace(
        messages_to_summarize=messages, turn_prefix_messages=(), previous_summary=None, previous_kept={},
        read_files=tuple(block_lines(summary, "read-files") or ()),
        modified_files=tuple(block_lines(summary, "modified-files") or ()),
    )
    kept = keep(plan, EVAL_WINDOW)
    gate = [{"action": "shellFilesAdded", "files": list(kept.shell_files)}] if kept.shell_files else []
    return with_blocks(summary, kept), gate


def rescore(directory: Path) -> list[dict[str, Any]]:
    rows = []
    data = json.loads((directory / "results.json").read_text(encoding="utf-8"))
    # A finished run writes {"meta", "results"}; one that was stopped has only the list it wrote so far.
    for result in data["results"] if isinstance(data, dict) else data:
        rules = load_rules(result["transcript"])
        row: dict[str, Any] = {"run": directory.name, "transcript": result["transcript"], "total": len(rules.facts)}
        for agent, data in result["agents"].items():
            summary_path = directory / result["transcript"] / agent / "summary.md"
            if not summary_path.exists():
                continue
            summary = summary_path.read_text(encoding="utf-8")
            row[f"{agent}_prose"] = len(facts_kept(rules, summary))
            row[f"{agent}_whole"] = len(facts_kept_whole(rules, summary))
            row[f"{agent}_probes"] = data.get("probes_right")
            if agent == "ours" and data.get("first_kept_entry_id"):
                added, gate = with_additions(summary, messages_before(rules, data["first_kept_entry_id"]))
                whole = facts_kept_whole(rules, added)
                row["ours_now"] = len(whole)
                row["ours_now_ids"] = whole
                row["ours_now_gate"] = [g["action"] for g in gate]
                (summary_path.parent / "summary.rescored.md").write_text(added, encoding="utf-8")
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = ["run", "transcript", "pi prose", "pi whole", "ours prose", "ours whole", "ours now (whole)",
            "probes pi", "probes ours"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sums = [0] * 7
    for row in rows:
        values = [row.get(k) for k in ("pi_prose", "pi_whole", "ours_prose", "ours_whole", "ours_now",
                                       "pi_probes", "ours_probes")]
        for i, value in enumerate(values):
            sums[i] += value or 0
        cells = [f"{v} / {row['total']}" if v is not None and i < 5 else ("—" if v is None else str(v))
                 for i, v in enumerate(values)]
        lines.append("| " + " | ".join([row["run"], row["transcript"], *cells]) + " |")
    total = sum(row["total"] for row in rows)
    lines.append("| | **total** | " + " | ".join(
        [f"**{s} / {total}**" for s in sums[:5]] + [f"**{s}**" for s in sums[5:]]) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args(argv)
    rows = [row for directory in args.results for row in rescore(directory)]
    print(table(rows))
    for row in rows:
        print(f"{row['run']}/{row['transcript']}: ours now keeps {row.get('ours_now_ids')}; "
              f"added {row.get('ours_now_gate')}")


if __name__ == "__main__":
    main()
