"""One agent in two kept runs, side by side: what a change to the summary request did (issue 41).

    .venv/bin/python benchmarks/eval/compare.py results/BEFORE results/AFTER [--agent ours]

Per transcript both runs have: facts in the model's own answer and in the whole summary (each scored
again from the kept files, ``recompute.rescore``), which facts the answer gained and lost, the
summarizer's prompt and answer tokens and its server seconds (llama.cpp's prompt_ms + predicted_ms of
every summary request; the load of a shared machine moves them, the tokens do not).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recompute import rescore  # noqa: E402


def _tokens(data: dict[str, Any]) -> tuple[int, int, float]:
    prompt = answer = 0
    seconds = 0.0
    for request in data.get("summarizer_timings", ()):
        timings = request.get("timings") or {}
        prompt += int(timings.get("prompt_n", 0))
        answer += int(timings.get("predicted_n", 0))
        seconds += (timings.get("prompt_ms", 0) + timings.get("predicted_ms", 0)) / 1000
    return prompt, answer, seconds


def table(before: Path, after: Path, agent: str = "ours") -> str:
    old = {r["transcript"]: r for r in rescore(before)[0]}
    new = {r["transcript"]: r for r in rescore(after)[0]}
    head = ("| transcript | answer before | answer after | whole before | whole after | answer gained | answer lost "
            "| prompt / answer tokens before | after | server s before | after |")
    lines = [head, "|" + "---|" * 11]
    sums = [0, 0, 0, 0, 0]
    for name in [n for n in new if n in old]:
        a, b = old[name]["agents"].get(agent), new[name]["agents"].get(agent)
        if a is None or b is None:
            continue
        total = len(new[name]["facts"])
        gained = sorted(set(b["facts_answer_ids"]) - set(a["facts_answer_ids"]))
        lost = sorted(set(a["facts_answer_ids"]) - set(b["facts_answer_ids"]))
        (pa, aa, sa), (pb, ab, sb) = _tokens(a), _tokens(b)
        for i, value in enumerate((len(a["facts_answer_ids"]), len(b["facts_answer_ids"]), len(a["facts_whole_ids"]),
                                   len(b["facts_whole_ids"]), total)):
            sums[i] += value
        lines.append(f"| {name} | {len(a['facts_answer_ids'])} / {total} | {len(b['facts_answer_ids'])} / {total} | "
                     f"{len(a['facts_whole_ids'])} / {total} | {len(b['facts_whole_ids'])} / {total} | "
                     f"{', '.join(gained) or '—'} | {', '.join(lost) or '—'} | {pa:,} / {aa} | {pb:,} / {ab} | "
                     f"{sa:.1f} | {sb:.1f} |")
    lines.append(f"| **total** | **{sums[0]} / {sums[4]}** | **{sums[1]} / {sums[4]}** | **{sums[2]} / {sums[4]}** | "
                 f"**{sums[3]} / {sums[4]}** | | | | | | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--agent", default="ours")
    args = parser.parse_args(argv)
    print(table(args.before, args.after, args.agent))


if __name__ == "__main__":
    main()
