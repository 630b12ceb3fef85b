"""Every table of kept eval runs, recomputed from their raw outputs without a model (issue 41).

    .venv/bin/python benchmarks/eval/recompute.py benchmarks/eval/results/RUN [RUN ...]

For each ``RUN/TRANSCRIPT/result.json`` (written by ``run_eval.py --save RUN``) the kept files are scored
again with the rules in ``data/``: ``summary.md`` whole, as prose and model only, ``model_answer.md`` as
the model's answer, and every probe answer under ``probes/`` and ``probes-recall-off/`` with its probe's
regex (the tool calls each answer made come from ``result.json``; they cannot be seen in the text). A
score that differs from the one the run recorded is reported. Several runs of one transcript are kept
apart (rows name their run); ``--merge`` puts agents of several runs of the same transcripts in one row.
``RUN:AGENT,AGENT`` takes only those agents of a run (pi's results of an earlier run beside ours of a later one).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report5 import all_tables  # noqa: E402
from scoring import facts_kept, facts_kept_whole, kept, load_rules, model_only, probe_right  # noqa: E402

_ANSWER = re.compile(r"\A.*?\n\n(?P<answer>[\s\S]*?)\n\n--- stderr ---", re.DOTALL)


def _run_and_agents(given: str) -> tuple[Path, set[str] | None]:
    """``RUN`` or ``RUN:AGENT,AGENT``: the kept run and the agents taken from it (None: every agent)."""
    path, _, agents = given.rpartition(":")
    if path and agents and "/" not in agents:
        return Path(path), set(agents.split(","))
    return Path(given), None


def rescore(run: Path, only: set[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The run's per-transcript results with every score recomputed from its files; the differences.
    ``only``: the agents to keep (a transcript with none of them is left out)."""
    results, differences = [], []
    for path in sorted(run.glob("*/result.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        if only is not None:
            result["agents"] = {agent: data for agent, data in result["agents"].items() if agent in only}
            if not result["agents"]:
                continue
        rules = load_rules(result["transcript"])
        for agent, data in result["agents"].items():
            folder = path.parent / agent
            summary = (folder / "summary.md").read_text(encoding="utf-8") if (folder / "summary.md").exists() else ""
            answer = (folder / "model_answer.md").read_text(encoding="utf-8") if (
                folder / "model_answer.md").exists() else ""
            fresh = {"facts_whole_ids": facts_kept_whole(rules, summary), "facts_kept_ids": facts_kept(rules, summary),
                     "facts_model_only_ids": kept(rules, model_only(summary)), "facts_answer_ids": kept(rules, answer)}
            for key, ids in fresh.items():
                if key in data and sorted(data[key]) != sorted(ids):
                    differences.append(f"{run.name}/{result['transcript']}/{agent} {key}: run {data[key]}, now {ids}")
                data[key] = ids
            for where, key in (("probes", "probes"), ("probes-recall-off", "probes_recall_off")):
                for probe in data.get(key, ()):
                    text = (folder / where / f"{probe['id']}.txt").read_text(encoding="utf-8")
                    found = _ANSWER.match(text)
                    rule = next(p for p in rules.probes if p["id"] == probe["id"])
                    right = probe_right(rule, found.group("answer") if found else "")
                    if right != probe["right"]:
                        differences.append(f"{run.name}/{result['transcript']}/{agent}/{where}/{probe['id']}: "
                                           f"run {probe['right']}, now {right}")
                    probe["right"] = right
        result["run"] = run.name
        results.append(result)
    return results, differences


def merge(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per transcript: the agents of every run of it (a later run's agent replaces an earlier one's)."""
    rows: dict[str, dict[str, Any]] = {}
    for result in results:
        row = rows.setdefault(result["transcript"], {**result, "agents": {}})
        row["agents"].update(result["agents"])
    return list(rows.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="kept runs: RUN, or RUN:AGENT,AGENT for some of its agents")
    parser.add_argument("--merge", action="store_true", help="one row per transcript across the runs")
    args = parser.parse_args(argv)
    results, differences = [], []
    for given in args.runs:
        found, differ = rescore(*_run_and_agents(given))
        results += found
        differences += differ
    if not args.merge:
        for result in results:
            result["transcript"] = f"{result['run']}: {result['transcript']}" if len(args.runs) > 1 else \
                result["transcript"]
    print(all_tables(merge(results) if args.merge else results))
    print("Scores that differ from the run's own:" if differences else "Every score is the run's own.")
    for line in differences:
        print(f"- {line}")


if __name__ == "__main__":
    main()
