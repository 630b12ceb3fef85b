"""Issue 12 §6: the pause automatic compaction makes the user wait, in the foreground and in the background.

A scripted 40-turn session (``tests/background_model.py``: each turn a 150-token question and a
450-token answer, usage reported as what the request holds) on an in-process model whose summarizer
takes ``--summary-s`` seconds. The threshold is 8000 tokens and the soft threshold 92 % of it, so the
context passes the soft threshold a turn before the hard one. Between two prompts the "user reads"
for ``--read-s`` seconds. For every prompt the pause is the time the user waits beyond the model's
own answer: from submitting to the request being sent (the pre-prompt check), plus from the end of
the run (``agent_end``) to being ready for input again (the post-run check). Both modes run the same
script; the background one also checks that each compaction entry it wrote equals, by position and
content, the one a foreground compaction writes at the same point.

    .venv/bin/python benchmarks/bench_background.py            # --summary-s 1.0 --read-s 1.5 --turns 40
    .venv/bin/python benchmarks/bench_background.py --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from background_model import ReadingModel, padded  # noqa: E402

from pi_compact.agent.events import AgentEnd, AgentStart, CompactionEnd, SessionEvent  # noqa: E402
from pi_compact.agent.session import AgentSession  # noqa: E402
from pi_compact.llm.protocol import ModelInfo  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402
from pi_compact.settings import CompactionSettings, Settings  # noqa: E402

INFO = ModelInfo("openai/scripted", "openai", 20_000, None)
BASE = CompactionSettings(reserve_tokens=12_000, keep_recent_tokens=1_200, token_estimator="chars4")
PERCENT = 92


def run_session(settings: Settings, turns: int, summary_s: float, read_s: float, directory: Path) -> dict[str, Any]:
    model = ReadingModel(INFO, summary_delay_s=summary_s)
    model.reading.set()  # the summarizer may answer at any time; reading is a sleep between prompts
    stamps: dict[str, float] = {}

    def emit(event: SessionEvent) -> None:
        if isinstance(event, (AgentStart, AgentEnd)):
            stamps[event.type] = time.perf_counter()
        if isinstance(event, CompactionEnd) and event.result is not None:
            stamps["compacted"] = 1.0

    path = directory / f"{'ahead' if settings.compaction.background else 'foreground'}.jsonl"
    cwd = directory / "work"
    cwd.mkdir(exist_ok=True)
    session = AgentSession(store=SessionStore.create(path, str(cwd), 1_700_000_000_000), model=model,
                           settings=settings, tools=[], system_prompt="You are the agent under test.", cwd=cwd,
                           emit=emit)
    pauses: list[float] = []
    compaction_pauses: list[float] = []
    try:
        for number in range(1, turns + 1):
            stamps.clear()
            submitted = time.perf_counter()
            session.prompt(padded(f"QUESTION-{number}", 150))
            ready = time.perf_counter()
            pause = (stamps["agent_start"] - submitted) + (ready - stamps["agent_end"])
            pauses.append(pause)
            if "compacted" in stamps:
                compaction_pauses.append(pause)
            time.sleep(read_s)
    finally:
        session.close()
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()][1:]
    return {
        "pauses": pauses,
        "compaction_pauses": compaction_pauses,
        "summarizer_calls": len(model.summarizer_calls()),
        "entries": entries,
    }


def comparable(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    position = {e["id"]: i for i, e in enumerate(entries)}
    return [
        {"at": position[e["id"]], "firstKept": position[e["firstKeptEntryId"]], "summary": e["summary"],
         "tokensBefore": e["tokensBefore"],
         "tail": [json.dumps(m.get("content"), sort_keys=True) for m in e["retainedTail"]],
         "details": {k: v for k, v in e["details"].items() if k != "background"}}
        for e in entries if e["type"] == "compaction"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--summary-s", type=float, default=1.0, help="how long each summary takes")
    parser.add_argument("--read-s", type=float, default=1.5, help="how long the user reads between prompts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ahead = Settings(compaction=replace(BASE, background=True, soft_threshold_percent=PERCENT))
    soft = (INFO.context_window - BASE.reserve_tokens) * PERCENT // 100
    at_soft = Settings(compaction=replace(BASE, reserve_tokens=INFO.context_window - soft))
    with tempfile.TemporaryDirectory() as tmp:
        results = {
            "foreground": run_session(Settings(compaction=BASE), args.turns, args.summary_s, args.read_s, Path(tmp)),
            "background": run_session(ahead, args.turns, args.summary_s, args.read_s, Path(tmp)),
        }
        (Path(tmp) / "same-point").mkdir()
        same_point = run_session(at_soft, args.turns, 0.0, 0.0, Path(tmp) / "same-point")
    equal = comparable(results["background"]["entries"]) == comparable(same_point["entries"])
    summary = {
        mode: {
            "compactions": len(r["compaction_pauses"]),
            "summarizer_calls": r["summarizer_calls"],
            "compaction_pause_s": [round(p, 4) for p in r["compaction_pauses"]],
            "max_pause_s": round(max(r["pauses"]), 4),
            "median_pause_s": round(statistics.median(r["pauses"]), 4),
        }
        for mode, r in results.items()
    }
    summary["background"]["entries_equal_foreground_at_same_point"] = equal
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{args.turns} turns, summary {args.summary_s} s, reading {args.read_s} s between prompts")
    for mode, row in summary.items():
        print(f"{mode:>10}: {row['compactions']} compactions, {row['summarizer_calls']} summarizer calls, "
              f"pause at compactions {row['compaction_pause_s']} s, max pause {row['max_pause_s']} s, "
              f"median {row['median_pause_s']} s")
    print(f"background entries equal a foreground compaction's at the same point: {equal} "
          "(expected when each summary is ready before the next prompt)")


if __name__ == "__main__":
    main()
