"""What the deterministic additions cost a compaction: CPU time, summary tokens, and the update request.

Issue 41 moved what a summary keeps by construction into tagged blocks (``compaction.kept``). The blocks
are code (no model call), but ``<user-messages>`` adds tokens to the summary, and a second compaction
asks the model with the previous summary in its request. This measures, per session, with a scripted
summarizer that answers at once with a fixed summary (so only our code is timed):

- ``add_ms``: CPU time of ``summarize`` (the plan's additions and the assembling; the model answers at once);
- ``summary_tok``: tokens of the summary written (the fixed answer plus what the code added);
- ``update_req_tok``: tokens of the serialized request of an update compaction over the same span whose
  previous summary is the first one (what the model reads again; its time is the model's prompt reading).

Run it on this tree and on an older checkout (``--tree``), e.g. ``git archive 1d92cea pi_compact | tar -x
-C /tmp/base`` then ``--tree /tmp/base``; the sessions are pi's parity fixtures (``../shared/fixtures``).

    .venv/bin/python benchmarks/bench_kept.py --runs 5
    .venv/bin/python benchmarks/bench_kept.py --runs 5 --tree /tmp/base
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per session (the fastest is reported)")
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the checkout whose pi_compact is measured")
    parser.add_argument("--window", type=int, default=16_384, help="the context window the budgets scale with")
    parser.add_argument("--keep", type=int, default=2_000, help="keepRecentTokens of the plans")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.tree.resolve()))
    sys.path.insert(0, str(HERE.parent / "tests"))

    from fixtures_path import parity_sessions

    from pi_compact.compaction.plan import prepare_compaction
    from pi_compact.compaction.prompts import HISTORY_HEADINGS
    from pi_compact.compaction.summarize import SummaryBudget, summarize
    from pi_compact.compaction.tokens import estimate_text_tokens
    from pi_compact.llm.protocol import ModelInfo
    from pi_compact.llm.scripted import ScriptedModel
    from pi_compact.session.store import SessionStore
    from pi_compact.settings import CompactionSettings

    answer = "\n\n".join(f"{heading}\n- a note of the model's own" for heading in HISTORY_HEADINGS)
    settings = CompactionSettings(keep_recent_tokens=args.keep, reserve_tokens=3_000)
    budget = SummaryBudget.for_model(args.window, None, settings.reserve_tokens)
    info = ModelInfo("bench/model", "bench", args.window, None)
    rows: list[dict[str, Any]] = []
    for session in parity_sessions():
        plan = prepare_compaction(SessionStore.open(session, str(session.parent), 0).branch(), settings)
        if plan is None or plan.is_empty:
            continue
        best = float("inf")
        result = None
        for _ in range(args.runs):
            started = time.process_time()
            result = summarize(plan, ScriptedModel(info, answer, answer), budget, run_parallel=_sequential)
            best = min(best, time.process_time() - started)
        assert result is not None
        update = replace(plan, previous_summary=result.summary)
        if hasattr(plan, "previous_kept"):  # this tree carries the blocks' items in details
            update = replace(update, previous_kept=result.details.get("kept", {}))
        model = ScriptedModel(info, answer, answer)
        summarize(update, model, budget, run_parallel=_sequential)
        request = "".join(str(block.get("text", "")) for message in model.history[0].messages
                          for block in message["content"])
        rows.append({"session": session.name, "add_ms": round(best * 1000, 2),
                     "summary_tok": estimate_text_tokens(result.summary),
                     "update_req_tok": estimate_text_tokens(request)})
    print(json.dumps({"tree": str(args.tree), "window": args.window, "rows": rows,
                      "total": {key: round(sum(r[key] for r in rows), 2)
                                for key in ("add_ms", "summary_tok", "update_req_tok")}}, indent=1))


def _sequential(first: Any, second: Any) -> tuple[str, str]:
    return first(), second()


if __name__ == "__main__":
    main()
