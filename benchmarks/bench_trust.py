"""Issue 42's attacks, timed and weighed: how long reading a hostile ``models.json`` takes, and the time and peak
memory of the real CLI stopping a reply made of ids, a Responses stream of new item ids, and a key command that
prints without end. Each case runs as a fresh process per checkout (``--variant name=path``; an empty path is
this checkout), the variants interleaved, under an address-space cap, with a time limit.

    git archive 1d92cea pi_compact | tar -x -C /tmp/base
    .venv/bin/python benchmarks/bench_trust.py --variant base=/tmp/base --variant new= --runs 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.raw_events import RawAnswer, RawEventServer  # noqa: E402

CAP = 1_500_000_000  # address space of each run (the review's cap)
LIMIT_S = 120.0
# Reads a models file in the checkout on PYTHONPATH; prints the seconds it took.
PARSE = """
import sys, time
from pathlib import Path
from pi_compact.settings.pi_models import read_pi_models
started = time.perf_counter()
read_pi_models(Path(sys.argv[1]))
print(time.perf_counter() - started)
"""
# The CLI, leaving its peak memory (VmHWM) in the file named by its first argument.
MEASURED = """
import atexit, sys
status = sys.argv.pop(1)
atexit.register(lambda: open(status, "w").write(open("/proc/self/status").read()))
sys.argv[0] = "pi-compact"
from pi_compact.cli import main
main()
"""


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def _env(checkout: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_", "PYTHONPATH"))}
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(agent), PYTHONPATH=checkout or str(ROOT),
               LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_OFFLINE_MODE="true")
    return env


def parse_case(checkout: str, text: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "models.json"
        path.write_text(text, encoding="utf-8")
        started = time.monotonic()
        try:
            # (cwd: ``python -c`` puts the current directory first on the path, before the checkout)
            done = subprocess.run([sys.executable, "-c", PARSE, str(path)], env=_env(checkout, Path(scratch)),
                                  cwd=scratch, capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            return {"outcome": f"not done after {LIMIT_S:g} s", "seconds": None}
        if done.returncode != 0:
            return {"outcome": done.stderr.strip().splitlines()[-1], "seconds": time.monotonic() - started}
        return {"outcome": "read", "seconds": float(done.stdout.strip())}


def cli_case(checkout: str, args: list[str], models: dict[str, Any] | None, settings: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        env = _env(checkout, home)
        agent = Path(env["PI_CODING_AGENT_DIR"])
        (agent / "settings.json").write_text(json.dumps(settings))
        if models is not None:
            (agent / "models.json").write_text(json.dumps(models))
        status = home / "status"
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-c", MEASURED, str(status), *args], cwd=home, env=env,
                                  capture_output=True, text=True, timeout=LIMIT_S, stdin=subprocess.DEVNULL,
                                  preexec_fn=_capped)
        except subprocess.TimeoutExpired:
            return {"outcome": f"not done after {LIMIT_S:g} s", "seconds": None, "peak_mb": None}
        seconds = time.monotonic() - started
        peak = None
        if status.exists():
            line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
            peak = int(line.split()[1]) / 1024
        said = [line for line in done.stderr.splitlines() if line.strip()]
        outcome = "MemoryError" if "MemoryError" in done.stderr else (said[-1][:110] if said else "no output")
        return {"outcome": outcome, "seconds": seconds, "peak_mb": peak}


def ids_chat() -> Iterator[dict[str, Any]]:
    for n in itertools.count():
        call = {"index": n, "id": f"{n:08d}" + "i" * 20_000, "function": {"name": f"{n:08d}" + "n" * 20_000}}
        yield {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def ids_responses() -> Iterator[dict[str, Any]]:
    yield {"type": "response.created", "response": {"id": "resp_1"}}
    for n in itertools.count():
        yield {"type": "response.output_text.delta", "output_index": 0, "item_id": f"msg_{n:08d}" + "m" * 100_000,
               "delta": "x"}


def cases(server: RawEventServer) -> dict[str, Callable[[str], dict[str, Any]]]:
    hostile = {  # unclosed comments (the review's file) and quotes whose every escape hides the closing one
        "models.json 30 KB of unclosed /*": "{" + "/* " * 10_000,
        "models.json 90 KB of unclosed /*": "{" + "/* " * 30_000,
        'models.json 40 KB of "\\ pairs': '{"a": ' + '"\\' * 20_000,
        "models.json 1 MB of unclosed /*": "{" + "/* " * 333_000,
        'models.json 1 MB of "\\ pairs': '{"a": ' + '"\\' * 499_000,
    }
    chosen: dict[str, Callable[[str], dict[str, Any]]] = {
        name: (lambda checkout, text=text: parse_case(checkout, text)) for name, text in hostile.items()}
    cap = {"retry": {"maxRetries": 0, "provider": {"maxReplyBytes": 1_000_000}}}

    def chat(checkout: str) -> dict[str, Any]:
        server.enqueue(RawAnswer(ids_chat()))
        return cli_case(checkout, ["--model", "openai/attacker", "--api-base", server.base_url, "--api-key", "k",
                                   "--context-window", "8000000", "--no-session", "-p", "hi"], None, cap)

    def responses(checkout: str) -> dict[str, Any]:
        server.enqueue(RawAnswer(ids_responses()))
        return cli_case(checkout, ["--model", "openai/gpt-4.1", "--api-key", "k", "--context-window", "8000000",
                                   "--no-session", "-p", "hi"], {"providers": {"openai": {"baseUrl": server.base_url}}},
                        cap)

    def key_command(checkout: str) -> dict[str, Any]:
        models = {"providers": {"lab": {"baseUrl": server.base_url, "api": "openai-completions",
                                        "apiKey": "!head -c 400000000 /dev/zero | tr '\\0' k",
                                        "models": [{"id": "m"}]}}}
        return cli_case(checkout, ["--model", "lab/m", "--no-session", "-p", "hi"], models,
                        {"retry": {"maxRetries": 0}})

    chosen.update({"chat: 20 KB id and name per chunk, cap 1 MB": chat,
                   "responses: new 100 KB item id per delta, cap 1 MB": responses,
                   "apiKey command printing 400 MB": key_command})
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[], help="name=checkout (empty: this one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds a run may take (default %(default)s)")
    args = parser.parse_args()
    global LIMIT_S
    LIMIT_S = args.limit
    variants = [tuple(v.split("=", 1)) for v in args.variant] or [("new", "")]
    server = RawEventServer().start()
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for name, run in cases(server).items():
            if args.only not in name:
                continue
            for _ in range(args.runs):
                for variant, checkout in variants:  # interleaved: a busy machine slows both alike
                    results.setdefault((name, variant), []).append(run(checkout))
    finally:
        server.stop()
    for (name, variant), runs in results.items():
        seconds = [r["seconds"] for r in runs if r["seconds"] is not None]
        peaks = [r["peak_mb"] for r in runs if r.get("peak_mb") is not None]
        figures = [f"median {statistics.median(seconds):.2f} s" if seconds else "",
                   f"peak {statistics.median(peaks):.0f} MB" if peaks else "", f"{len(runs)} runs"]
        print(f"{name} [{variant}]: {runs[-1]['outcome']}; " + ", ".join(f for f in figures if f))

if __name__ == "__main__":
    main()
