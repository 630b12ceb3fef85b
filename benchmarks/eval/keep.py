"""What an eval run keeps in the repository (``run_eval.py --save NAME``): its small raw outputs.

Under ``benchmarks/eval/results/NAME/``: ``meta.json`` (the commit the run was on, whether its tree had
changes, the command line, the machine's load when it started and ended), and per transcript and agent the
compaction's ``summary.md``, the model's own answer (``model_answer.md``), the compaction entry without its
kept tail (``compaction.json``) and every probe's answer (``probes/``, ``probes-recall-off/``); per
transcript the scores and server timings (``result.json``); at the end ``results.json`` and ``table.md``.
Session copies, scratch homes and full request bodies stay in the scratch results directory.
``recompute.py`` rebuilds every table from these files without a model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
_FILES = ("summary.md", "model_answer.md", "compaction.json")
_DIRS = ("probes", "probes-recall-off")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    return done.stdout.rstrip()  # not the left: a porcelain line starts with its status column, maybe a space


def tree(root: Path) -> dict[str, Any]:
    """The commit of the checkout at ``root`` and whether its tracked files differ from it."""
    return {"commit": _git(root, "rev-parse", "HEAD").strip(),
            "changed_files": [line[3:] for line in _git(root, "status", "--porcelain", "-uno").splitlines()]}


def start(name: str, root: Path, argv: list[str], baseline: Path | None = None) -> Path:
    saved = RESULTS / name
    saved.mkdir(parents=True, exist_ok=True)
    meta = {"name": name, "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "argv": argv, "tree": tree(root),
            "load_at_start": os.getloadavg()}
    if baseline is not None:
        meta["baseline_tree"] = tree(baseline)
    (saved / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return saved


def transcript(out: Path, saved: Path, result: dict[str, Any]) -> None:
    """Copy one finished transcript's small files (every agent, and their repeats)."""
    name = result["transcript"]
    for agent in result["agents"]:
        sources = [(out / name / agent, saved / name / agent)]
        sources += [(repeat / name / agent, saved / name / agent / repeat.name)
                    for repeat in sorted(out.glob("repeat-*"))]
        for source, dest in sources:
            if not source.is_dir():
                continue
            dest.mkdir(parents=True, exist_ok=True)
            for file in _FILES:
                if (source / file).exists():
                    shutil.copyfile(source / file, dest / file)
            for folder in _DIRS:
                if (source / folder).is_dir():
                    shutil.copytree(source / folder, dest / folder, dirs_exist_ok=True)
    (saved / name / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def finish(saved: Path, meta: dict[str, Any], results: list[dict[str, Any]], tables: str) -> None:
    kept = json.loads((saved / "meta.json").read_text(encoding="utf-8"))
    kept |= {"run": meta, "finished": time.strftime("%Y-%m-%d %H:%M:%S %z"), "load_at_end": os.getloadavg()}
    (saved / "meta.json").write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    (saved / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (saved / "table.md").write_text(tables, encoding="utf-8")
