"""CPU time and peak memory of model-calling runs (issue 9), each a fresh ``pi-compact`` process.

A scripted OpenAI-compatible server (``tests/scripted_server.py``) runs inside this script and answers
at once, so the numbers are the client's own work. Cases:

- ``hi``: ``-p hi --no-session`` (start, one request, the answer);
- ``loop``: ``-p go --no-session`` with N tool calls (``ls``) before the final answer;
- ``bigloop``: the same loop, but continuing a generated session of ``--big-mb`` MB of history, so
  every request carries that much context;
- ``compact``: ``compact`` of a generated 1 MB session (the summary request answered at once).

Each variant is a way to run the CLI; runs are interleaved (variant A, B, A, B...) so a busy minute
hits all of them. ``--variant NAME=PYTHONPATH[,ENV=VALUE...]`` adds one: e.g. an exported older
checkout (``git archive HEAD pi_compact | tar -x -C /tmp/base``) as ``base=/tmp/base``, or this
checkout with ``PI_COMPACT_MODEL_PATH=litellm``.

    .venv/bin/python benchmarks/bench_model_layer.py --runs 5 --cases hi,loop \\
        --variant base=/tmp/base --variant new= --variant litellm=,PI_COMPACT_MODEL_PATH=litellm

Printed per case and variant: median wall s, median CPU s (user + system), median peak RSS MB, and
for loops the CPU per iteration (the ``hi`` run's median CPU subtracted first when it was measured).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from make_session import write_session  # noqa: E402
from scripted_server import Reply, ScriptedServer, ToolCallReply  # noqa: E402

from pi_compact.compaction.prompts import HISTORY_HEADINGS, PROGRESS_SUBHEADINGS, TURN_PREFIX_HEADINGS  # noqa: E402


@dataclass(frozen=True)
class Variant:
    name: str
    pythonpath: str
    env: dict[str, str]


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    rss_mb: float


def parse_variant(text: str) -> Variant:
    name, _, rest = text.partition("=")
    path, *pairs = rest.split(",")
    env = dict(pair.split("=", 1) for pair in pairs if pair)
    return Variant(name, path, env)


def run_cli(variant: Variant, args: list[str], cwd: Path) -> Sample:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_COMPACT_")}
    env.update(variant.env)
    env["PYTHONPATH"] = variant.pythonpath
    env["HOME"] = str(cwd)  # no user settings
    out = cwd / "time.txt"
    done = subprocess.run(
        ["/usr/bin/time", "-o", str(out), "-f", "%e %M %U %S", sys.executable, "-m", "pi_compact", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{variant.name} {args[:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    wall, rss_kb, user, system = out.read_text().split()[-4:]
    return Sample(float(wall), float(user) + float(system), int(rss_kb) / 1024)


# Passes both summary validators: every heading of the history and of the turn-prefix format.
SUMMARY = Reply(text="\n".join(f"{h}\n- line" for h in (*HISTORY_HEADINGS, *PROGRESS_SUBHEADINGS,
                                                          *TURN_PREFIX_HEADINGS)), prompt_tokens=1000)


def model_args(server: ScriptedServer, window: int) -> list[str]:
    return ["--model", "openai/bench", "--api-base", server.base_url, "--api-key", "k",
            "--context-window", str(window)]


def loop_script(server: ScriptedServer, iterations: int) -> None:
    """``iterations`` tool calls, then the answer. (Checkouts before commit "agent: no cap on model
    turns" stopped a prompt after 200 model turns: compare with them with ``--iterations`` 199 or less.)"""
    call = Reply(tool_calls=(ToolCallReply("ls", {"path": "."}),), prompt_tokens=100)
    server.enqueue(*([call] * iterations), Reply(text="done"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cases", default="hi,loop,bigloop,compact")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--big-iterations", type=int, default=30)
    parser.add_argument("--big-mb", type=float, default=6.0)
    parser.add_argument("--variant", action="append", type=parse_variant, default=[])
    options = parser.parse_args(argv)
    variants = options.variant or [Variant("new", "", {})]
    cases = options.cases.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-model-"))
    server = ScriptedServer().start()
    try:
        big = write_session(work / "big.jsonl", options.big_mb, seed=7, compact_every_mb=10_000)
        small = write_session(work / "one.jsonl", 1, seed=7)
        copy = work / "copy.jsonl"

        def fresh(source: Path) -> str:
            shutil.copyfile(source, copy)
            return str(copy)

        scripts: dict[str, Callable[[], list[str]]] = {
            "hi": lambda: (server.enqueue(Reply(text="hello")),
                           ["-p", "hi", "--no-session", *model_args(server, 8000)])[1],
            "loop": lambda: (loop_script(server, options.iterations),
                             ["-p", "go", "--no-session", *model_args(server, 1_000_000)])[1],
            "bigloop": lambda: (loop_script(server, options.big_iterations),
                                ["-p", "go", "--session", fresh(big), *model_args(server, 100_000_000)])[1],
            # However many summary requests the cut needs (history, split-turn prefix), each is answered.
            "compact": lambda: (server.enqueue(replace(SUMMARY, repeat=True)),
                                ["compact", fresh(small), *model_args(server, 200_000)])[1],
        }
        results: dict[tuple[str, str], list[Sample]] = {}
        for case in cases:
            for _ in range(options.runs):
                for variant in variants:
                    args = scripts[case]()
                    results.setdefault((case, variant.name), []).append(run_cli(variant, args, work))
                    left = server.pending
                    with server._lock:  # a repeating reply stays queued: start the next run empty
                        server._queue.clear()
                    assert case == "compact" or left == 0, f"{case}/{variant.name}: {left} replies unused"
        print(f"load average: {os.getloadavg()[0]:.2f}; runs per cell: {options.runs}")
        print(f"{'case':<8} {'variant':<10} {'wall s':>7} {'cpu s':>7} {'min cpu':>7} {'rss MB':>7} "
              f"{'cpu/iter ms':>11}")
        for (case, name), samples in results.items():
            cpu = statistics.median(s.cpu for s in samples)
            per_iter = ""
            if case in ("loop", "bigloop"):
                base = statistics.median(s.cpu for s in results.get(("hi", name), [])) if ("hi", name) in results else 0
                count = options.iterations if case == "loop" else options.big_iterations
                per_iter = f"{(cpu - base) / count * 1000:.1f}"
            print(f"{case:<8} {name:<10} {statistics.median(s.wall for s in samples):7.2f} {cpu:7.2f} "
                  f"{min(s.cpu for s in samples):7.2f} {statistics.median(s.rss_mb for s in samples):7.0f} "
                  f"{per_iter:>11}")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
