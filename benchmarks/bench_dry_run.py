"""Whole-process timings of ``pi-compact compact FILE --dry-run --json`` and ``pi-compact --version``.

Each case runs as a fresh child process, once untimed and then N times; the table gives the median and
best wall time, the median CPU time (user + system, less sensitive to a busy machine than wall time)
and the child's peak memory (max RSS, from ``os.wait4``). The small cases run in two bytecode modes:
"cached" (.pyc files written and reused, as for an installed pi-compact) and "none"
(PYTHONDONTWRITEBYTECODE=1, as on the development machine: pi_compact is compiled at every start).
Cases:

- the 1 MB real pi session of the shared fixtures (target: at most half of pi's 0.48 s, so 0.24 s);
- two generated 100 MB sessions, ~94k entries each (target: under 3 s, peak memory under 3x the file):
  a realistic mix with compactions, and the same mix without any compaction, where the whole file is
  history to summarize and the JSON report is ~64 MB; the latter also with the human-readable output;
- ``pi-compact --version`` (target: 0.15 s; pi takes 1.16 s);
- when pi 0.73.1 is installed in ``node_modules`` (``npm install --no-save @mariozechner/pi-coding-agent@0.73.1``),
  pi itself doing the same work (``benchmarks/pi_dry_run.mjs``) and ``pi --version``, for reference.

Usage: ``python benchmarks/bench_dry_run.py [--runs 7] [--big-runs 3] [--no-big] [--no-pi]
[--bytecode cached|none] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_session import cached_session  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT.parent / "shared" / "fixtures" / "parity" / "pi-large-session.jsonl"
PI_PACKAGE = ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent"
PI_SCRIPT = Path(__file__).resolve().parent / "pi_dry_run.mjs"
DRY_RUN_FLAGS = ["--dry-run", "--json", "--token-estimator", "chars4", "--context-window", "200000"]
PI_REFERENCE = {"dry_run_1mb": 0.48, "version": 1.16}  # seconds, measured for the issue (Node start included)


@dataclass(frozen=True)
class Result:
    """One benchmark case, summarized over its runs."""

    name: str
    runs: int
    wall_median_s: float
    wall_min_s: float
    cpu_median_s: float
    max_rss_mb: float
    file_mb: float | None = None
    target: str = ""
    passed: bool | None = None

    @property
    def rss_ratio(self) -> float | None:
        return self.max_rss_mb / self.file_mb if self.file_mb else None


def run_once(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, cpu s, max RSS MB) of one child run; stdout is discarded, a failure is fatal."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{errors.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def bytecode_env(mode: str, scratch: Path) -> dict[str, str]:
    """The child's environment: "cached" writes and reuses .pyc files (as an installed pi-compact
    does), "none" compiles pi_compact's modules at every start (PYTHONDONTWRITEBYTECODE=1)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    if mode == "cached":
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def measure(
    name: str, command: list[str], runs: int, cwd: Path, env: dict[str, str], file: Path | None = None
) -> Result:
    run_once(command, cwd, env)  # untimed: warms the page cache (and the bytecode cache, when kept)
    samples = [run_once(command, cwd, env) for _ in range(runs)]
    walls = [s[0] for s in samples]
    return Result(
        name=name, runs=runs, wall_median_s=statistics.median(walls), wall_min_s=min(walls),
        cpu_median_s=statistics.median(s[1] for s in samples), max_rss_mb=max(s[2] for s in samples),
        file_mb=file.stat().st_size / 1e6 if file else None,
    )


def judged(result: Result, target: str, passed: bool) -> Result:
    return Result(**{**asdict(result), "target": target, "passed": passed})


def our_output(python: str, session: Path, cwd: Path) -> dict[str, object]:
    out = subprocess.run([python, "-m", "pi_compact", "compact", str(session), *DRY_RUN_FLAGS],
                         cwd=cwd, capture_output=True, check=True)
    report: dict[str, object] = json.loads(out.stdout)
    return report


def pi_agreement(python: str, session: Path, cwd: Path) -> str:
    """Which report keys pi and we agree on, for a v3 file (ids are stable there)."""
    ours = our_output(python, session, cwd)
    out = subprocess.run(["node", str(PI_SCRIPT), str(session)], cwd=cwd, capture_output=True, check=True)
    theirs = json.loads(out.stdout)
    keys = ["context_tokens", "should_compact", "context_roles"]
    ours_plan, theirs_plan = ours.get("plan") or {}, theirs.get("plan") or {}
    assert isinstance(ours_plan, dict)
    plan_keys = [k for k in theirs_plan if k not in ("serialized_history", "serialized_turn_prefix")]
    same = [k for k in keys if ours[k] == theirs[k]] + [k for k in plan_keys if ours_plan.get(k) == theirs_plan[k]]
    return f"{len(same)}/{len(keys) + len(plan_keys)} report keys equal to pi's"


def machine() -> dict[str, object]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "platform": platform.platform(),
            "python": platform.python_version(), "load_avg": os.getloadavg()}


def table(results: list[Result]) -> str:
    head = f"{'case':<48} {'runs':>4} {'wall med':>9} {'wall min':>9} {'cpu med':>8} {'max RSS':>9} {'RSS/file':>8}"
    head += "  target"
    lines = [head, "-" * len(head)]
    for r in results:
        ratio = f"{r.rss_ratio:.2f}x" if r.rss_ratio is not None else "-"
        verdict = "" if r.passed is None else (" ok" if r.passed else " MISSED")
        lines.append(
            f"{r.name:<48} {r.runs:>4} {r.wall_median_s:>8.3f}s {r.wall_min_s:>8.3f}s {r.cpu_median_s:>7.3f}s "
            f"{r.max_rss_mb:>7.1f}MB {ratio:>8}  {r.target}{verdict}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per small case (default 7)")
    parser.add_argument("--big-runs", type=int, default=3, help="runs per 100 MB case (default 3)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with pi_compact installed")
    parser.add_argument("--no-big", action="store_true", help="skip the 100 MB cases")
    parser.add_argument("--no-pi", action="store_true", help="do not run pi (Node) even when installed")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--bytecode", choices=("cached", "none"), action="append",
                        help="bytecode mode of the small cases, repeatable (default: both); big cases use cached")
    args = parser.parse_args(argv)
    args.bytecode = args.bytecode or ["cached", "none"]

    python = args.python
    script = Path(python).parent / "pi-compact"
    with_pi = not args.no_pi and PI_PACKAGE.is_dir() and shutil.which("node") is not None
    started = machine()
    results: list[Result] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)  # no project settings from the checkout leak into the runs
        small = cwd / FIXTURE.name  # a writable copy: pi rewrites legacy (v1) files when it opens them
        shutil.copyfile(FIXTURE, small)
        ours = [python, "-m", "pi_compact", "compact", str(small), *DRY_RUN_FLAGS]
        for mode in args.bytecode:
            env = bytecode_env(mode, cwd)
            tag = f"{mode} bytecode"
            r = measure(f"dry-run 1 MB, python -m ({tag})", ours, args.runs, cwd, env, small)
            results.append(judged(r, "<= 0.240s", r.wall_median_s <= 0.24))
            if script.is_file():
                r = measure(f"dry-run 1 MB, pi-compact ({tag})", [str(script), *ours[3:]], args.runs, cwd, env, small)
                results.append(judged(r, "<= 0.240s", r.wall_median_s <= 0.24))
                r = measure(f"--version, pi-compact ({tag})", [str(script), "--version"], args.runs, cwd, env)
                results.append(judged(r, "<= 0.150s", r.wall_median_s <= 0.15))
        env = bytecode_env("cached", cwd)
        # (label, compaction every N MB (0: never), also the human-readable output?)
        big_cases = [] if args.no_big else [("realistic", 0.75, False), ("no compaction", 0.0, True)]
        for label, every, human in big_cases:
            big = cached_session(100, 7, every)
            command = [python, "-m", "pi_compact", "compact", str(big), *DRY_RUN_FLAGS]
            variants = [(f"dry-run 100 MB, {label}", command)]
            if human:
                variants.append((f"dry-run 100 MB, {label}, human", [c for c in command if c != "--json"]))
            for name, variant in variants:
                r = measure(name, variant, args.big_runs, cwd, env, big)
                limit = 3 * r.file_mb if r.file_mb else 0.0
                results.append(judged(r, f"< 3.000s, RSS < {limit:.0f}MB",
                                      r.wall_median_s < 3.0 and r.max_rss_mb < limit))
        # pi last: its 100 MB runs load all cores and take a GB, which slowed the runs that came after
        # them on the shared development machine.
        if with_pi:
            results.append(measure("pi: same dry run, 1 MB (node)", ["node", str(PI_SCRIPT), str(small)],
                                   args.runs, cwd, env, small))
            results.append(measure("pi: --version (node)", ["node", str(PI_PACKAGE / "dist" / "cli.js"),
                                                              "--version"], args.runs, cwd, env))
            for label, every, _ in big_cases:
                big = cached_session(100, 7, every)
                results.append(measure(f"pi: same dry run, 100 MB, {label} (node)",
                                       ["node", str(PI_SCRIPT), str(big)], args.big_runs, cwd, env, big))
                notes.append(f"100 MB {label}: {pi_agreement(python, big, cwd)}")
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M"), "machine": started, "load_avg_after": os.getloadavg(),
        "pi_reference_s": PI_REFERENCE, "notes": notes,
        "results": [{**asdict(r), "rss_ratio": r.rss_ratio} for r in results],
    }
    text = table(results) + "".join(f"\nnote: {n}" for n in notes)
    text += f"\nload average before {started['load_avg']}, after {report['load_avg_after']}"
    print(text, file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(report, indent=2))
    return 0 if all(r.passed is not False for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
