"""pi-compact side by side with pi 0.73.1 on the speed targets of issue 9 (CPU time and peak memory).

Both tools run as fresh processes against one scripted OpenAI-compatible server on 127.0.0.1 that
answers at once, interleaved run by run (ours first on even runs, pi first on odd ones), after one
untimed warm-up run each. Each row gives the medians of ours and of pi, and the median of the per-run
ratios ours / pi (run i of ours against run i of pi, which ran next to it). CPU is user + system time;
the machine is shared, so wall time says little and is left out.

Cases (``--case``, repeatable; default all but the 100 MB resume, which needs ``--big``):

- ``p_hi``: ``-p hi`` without a session; measured twice: up to the request's arrival at the server
  (the server reads the client's ``/proc/PID/stat`` and ``VmHWM`` then) and as the whole process.
- ``resume``: one ``-p`` turn on a copy of a generated 1 MB / 10 MB (/ 100 MB with ``--big``) session
  (``make_session.py``, with compactions, header cwd set to the run directory); whole process.
- ``loop``: one ``-p`` prompt of 200 model turns (``--iterations``): the server asks 199 times for
  ``read`` of a small file, then answers (200 requests: pi-compact used to stop a prompt after 200
  turns, so older checkouts can be compared too). CPU per iteration = CPU between the first and the
  last request's arrival / 199. A new session file is written, as in normal use.
- ``loop6mb``: the same loop resuming a generated 8 MB session without compactions: ~6 MB of messages
  per request (compaction disabled, 10M-token window); ``--iterations6`` turns (default 50).
- ``compact``: manual compaction of the 1 MB real pi session (``pi-compact compact FILE`` / pi's RPC
  ``{"type": "compact"}``); whole process.
- ``version``: ``--version`` (the absolute targets, prompt ≤ 0.5 s and ``--version`` ≤ 0.15 s, are
  measured by ``bench_startup.py`` and ``bench_dry_run.py``).

Usage: ``.venv/bin/python benchmarks/bench_vs_pi.py [--case p_hi|resume|loop|loop6mb|compact|version|all]
[--runs 3] [--big] [--iterations 200] [--iterations6 50] [--bytecode cached|none] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "tests")]
from make_session import cached_session  # noqa: E402
from scripted_server import Reply, ToolCallReply  # noqa: E402
from vs_pi_lib import OURS_CLI, PI_CLI, ProbeServer, Sample, Tool, copy_session, make_tools, run_one  # noqa: E402

FIXTURE_1MB = Path("/work/shared/fixtures/pi-large-session.jsonl")
CASES = ("p_hi", "resume", "loop", "loop6mb", "compact", "version")
ANSWER = "Hello from the scripted server."
# A summary that passes our quality gate (all six sections, none left empty), so that `compact` ends
# with the model's summary (exit 0) rather than the model-free one (exit 3).
SUMMARY = (
    "## Goal\nBenchmark the compaction.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n"
    "### Done\n- [x] measured it\n\n### In Progress\n- [ ] compare\n\n### Blocked\n- (none)\n\n"
    "## Key Decisions\n- **CPU time**: the machine is shared\n\n## Next Steps\n1. report\n\n"
    "## Critical Context\n- (none)"
)
READ_ME = "notes.txt"

# One metric of one run: (CPU seconds, peak RSS MB or None).
Metric = tuple[float, "float | None"]
Measure = Callable[[Sample], dict[str, Metric]]


@dataclass(frozen=True)
class Run:
    """How to run one case once: the command of each tool, the server's replies, what to read off."""

    command: Callable[[Tool, Path], list[str]]
    replies: Sequence[Reply]
    check: Callable[[Sample, Path], str | None]  # a problem with the run, or None
    measure: Measure
    session: Path | None = None  # copied into the run directory as session.jsonl before each run
    rpc: str | None = None
    warm_up: bool = True  # False for the slow ones: main() warmed the caches, the session is read first


@dataclass(frozen=True)
class Row:
    case: str
    metric: str
    runs: int
    ours_cpu: float
    pi_cpu: float
    cpu_ratio: float
    ours_rss: float | None
    pi_rss: float | None
    rss_ratio: float | None
    target: str


def whole(s: Sample) -> Metric:
    return s.cpu_s, s.rss_mb


def to_request(s: Sample) -> Metric:
    return s.probes[0].cpu_s, s.probes[0].hwm_mb


def per_iteration(s: Sample) -> Metric:
    first, last = s.probes[0], s.probes[-1]
    return (last.cpu_s - first.cpu_s) / (len(s.probes) - 1), None  # tool call + answer + next request


def answered(sample: Sample, _: Path) -> str | None:
    return None if ANSWER in sample.stdout else f"answer missing from stdout: {sample.stdout[-300:]!r}"


def compacted(_: Sample, run_dir: Path) -> str | None:
    with open(run_dir / "session.jsonl", "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - 200_000))
        tail = handle.read()
    return None if b'"type":"compaction"' in tail else "no compaction entry at the end of the session"


def answered_in_session(sample: Sample, run_dir: Path) -> str | None:
    with open(run_dir / "session.jsonl", "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
        tail = handle.read()
    return answered(sample, run_dir) or (None if ANSWER.encode() in tail else "answer not appended to the session")


def looped(requests: int) -> Callable[[Sample, Path], str | None]:
    def check(sample: Sample, run_dir: Path) -> str | None:
        if len(sample.probes) != requests:
            return f"{len(sample.probes)} requests instead of {requests}"
        return answered_in_session(sample, run_dir)
    return check


def loop_replies(requests: int) -> list[Reply]:
    """``requests - 1`` tool calls, then the answer: ``requests`` model turns in one prompt."""
    calls = [Reply(tool_calls=(ToolCallReply("read", {"path": READ_ME}, id=f"call_{i:04d}"),))
             for i in range(requests - 1)]
    return [*calls, Reply(text=ANSWER)]


def prompt_in(session: str | None, text: str = "hi") -> Callable[[Tool, Path], list[str]]:
    return lambda tool, run_dir: tool.prompt(text, run_dir / session if session else None)


def plan(case: str, args: argparse.Namespace) -> list[tuple[str, Run, dict[str, str]]]:
    """(row name, how to run, {metric: target}) for one case."""
    both: Measure = lambda s: {"to request": to_request(s), "whole process": whole(s)}  # noqa: E731
    loop_metrics: Measure = lambda s: {"per iteration": per_iteration(s), "whole process": whole(s)}  # noqa: E731
    only_whole: Measure = lambda s: {"whole process": whole(s)}  # noqa: E731
    if case == "p_hi":
        run = Run(prompt_in(None), [Reply(text=ANSWER)], answered, both)
        return [("p_hi", run, {"to request": "cpu ≤ 1.0×, rss ≤ 1.0×", "whole process": ""})]
    if case == "resume":
        sizes = [1, 10] + ([100] if args.big else [])
        return [(f"resume {mb} MB", Run(prompt_in("session.jsonl"), [Reply(text=ANSWER)], answered_in_session, both,
                                        session=cached_session(mb, 7, 0.75), warm_up=mb < 100),
                 {"whole process": "cpu ≤ 1.0×" + (", rss ≤ 0.6×" if mb == 100 else ""), "to request": ""})
                for mb in sizes]
    if case == "loop":
        n = args.iterations
        run = Run(prompt_in("session.jsonl", "go"), loop_replies(n), looped(n), loop_metrics)
        return [(f"loop {n} turns", run, {"per iteration": "cpu ≤ 1.0×", "whole process": ""})]
    if case == "loop6mb":
        n = args.iterations6
        run = Run(prompt_in("session.jsonl", "go"), loop_replies(n), looped(n), loop_metrics,
                  session=cached_session(8, 7, 0), warm_up=False)  # 8 MB of file: ~6 MB of messages
        return [(f"loop6mb {n} turns", run, {"per iteration": "cpu ≤ 1.0×", "whole process": ""})]
    if case == "compact":
        run = Run(lambda tool, d: tool.compact(d / "session.jsonl"), [Reply(text=SUMMARY, repeat=True)],
                  compacted, only_whole, session=FIXTURE_1MB, rpc='{"id": "bench-1", "type": "compact"}')
        return [("compact 1 MB real", run, {"whole process": "cpu ≤ 1.0×"})]
    run = Run(lambda tool, _: [*tool.base[:2 if tool.name == "pi" else 1], "--version"], [],
              lambda s, _: None, only_whole)  # pi prints it on stderr; exit status 0 is checked
    return [("--version", run, {"whole process": ""})]


def one(tool: Tool, run: Run, scratch: Path, server: ProbeServer) -> Sample:
    run_dir = scratch / f"run-{tool.name}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir()
    (run_dir / READ_ME).write_text("".join(f"line {i}: the quick brown fox\n" for i in range(40)))
    if run.session is not None:
        copy_session(run.session, run_dir / "session.jsonl", run_dir)
    sample = run_one(tool, run.command(tool, run_dir), run_dir, server, run.replies, rpc=run.rpc)
    problem = run.check(sample, run_dir)
    if problem:
        raise SystemExit(f"{tool.name}: {problem}")
    return sample


def measure_case(name: str, run: Run, targets: dict[str, str], runs: int, tools: list[Tool], scratch: Path,
                 server: ProbeServer) -> list[Row]:
    for tool in tools if run.warm_up else []:
        one(tool, run, scratch, server)  # untimed warm-up: page cache, bytecode cache
    if run.session is not None and not run.warm_up:
        with open(run.session, "rb") as handle:  # into the page cache
            while handle.read(1 << 24):
                pass
    by_tool: dict[str, list[dict[str, Metric]]] = {t.name: [] for t in tools}
    for i in range(runs):
        for tool in tools if i % 2 == 0 else tools[::-1]:
            by_tool[tool.name].append(run.measure(one(tool, run, scratch, server)))
        print(f"  {name} run {i + 1}/{runs}: " + ", ".join(
            f"{t}: " + " / ".join(f"{k} {v[0]:.3f}s" for k, v in by_tool[t][-1].items()) for t in by_tool),
              file=sys.stderr, flush=True)
    rows = []
    for metric, target in targets.items():
        ours = [m[metric] for m in by_tool["ours"]]
        pi = [m[metric] for m in by_tool["pi"]]
        ours_rss = [o[1] for o in ours if o[1] is not None]
        pi_rss = [p[1] for p in pi if p[1] is not None]
        known = len(ours_rss) == len(pi_rss) == runs
        rows.append(Row(
            name, metric, runs, statistics.median(o[0] for o in ours), statistics.median(p[0] for p in pi),
            statistics.median(o[0] / p[0] for o, p in zip(ours, pi, strict=True)),
            statistics.median(ours_rss) if known else None, statistics.median(pi_rss) if known else None,
            statistics.median(o / p for o, p in zip(ours_rss, pi_rss, strict=True)) if known else None,
            target))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| Case | Measured | Ours CPU | pi CPU | CPU ratio | Ours peak RSS | pi peak RSS | RSS ratio | Target |",
             "|---|---|---|---|---|---|---|---|---|"]
    per = {"per iteration": 1000.0}
    for r in rows:
        unit, scale = ("ms", 1000.0) if r.metric in per else ("s", 1.0)
        cpu = f"{r.ours_cpu * scale:.3f} {unit} | {r.pi_cpu * scale:.3f} {unit} | {r.cpu_ratio:.2f}×"
        rss = (f"{r.ours_rss:.0f} MB | {r.pi_rss:.0f} MB | {r.rss_ratio:.2f}×" if r.ours_rss is not None
               and r.pi_rss is not None and r.rss_ratio is not None else "| |")
        lines.append(f"| {r.case} | {r.metric} | {cpu} | {rss} | {r.target} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=(*CASES, "all"), help="repeatable (default: all)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per tool and case (default 3)")
    parser.add_argument("--big", action="store_true", help="also resume the 100 MB session (slow)")
    parser.add_argument("--iterations", type=int, default=200, help="model turns of the loop case (200)")
    parser.add_argument("--iterations6", type=int, default=50, help="model turns of the loop6mb case (50)")
    parser.add_argument("--bytecode", choices=("cached", "none"), default="cached",
                        help="ours: .pyc cached outside the checkout (default, as installed) or none")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    cases = CASES if not args.case or "all" in args.case else tuple(c for c in CASES if c in args.case)
    for needed in (PI_CLI, OURS_CLI, FIXTURE_1MB):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing (see benchmarks/README.md)")
    load_before = os.getloadavg()
    rows: list[Row] = []
    server = ProbeServer()
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-vs-pi-") as tmp:
            scratch = Path(tmp)
            _, warm, _ = plan("p_hi", args)[0]  # fills the bytecode cache (first use: ~10 s)
            for tool in make_tools(server, scratch / "warm-up", 1_000_000, True, args.bytecode):
                one(tool, warm, scratch, server)
            for case in cases:
                big_window = case == "loop6mb"
                # A window far above the sessions' contexts: no automatic compaction in either tool
                # (loop6mb: 6 MB is ~1.5M tokens, and compaction is switched off as well).
                tools = make_tools(server, scratch / case, 10_000_000 if big_window else 1_000_000,
                                   compaction=not big_window, bytecode=args.bytecode)
                for name, run, targets in plan(case, args):
                    print(f"{name} ...", file=sys.stderr, flush=True)
                    rows.extend(measure_case(name, run, targets, args.runs, tools, scratch, server))
                    if case == "loop6mb":
                        print(f"  first request: {server.first_request_bytes / 1e6:.1f} MB of messages",
                              file=sys.stderr)
    finally:
        server.stop()
    print(table(rows))
    print(f"\n{time.strftime('%Y-%m-%d %H:%M')}, runs={args.runs}, bytecode={args.bytecode}, load average "
          f"{' '.join(f'{x:.1f}' for x in load_before)} before, {' '.join(f'{x:.1f}' for x in os.getloadavg())} after")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
