"""Time from launching ``pi-compact`` to a usable prompt, in a real terminal (tmux).

Each run starts the interactive CLI in a fresh tmux server (its own socket) and polls
``capture-pane`` every few milliseconds until the prompt ``pi>`` is on screen. The clock starts when
the pane's shell execs the CLI (the shell writes the time first), so tmux's own start-up is not
counted. No model is called: the prompt must appear while litellm is still importing.

    .venv/bin/python benchmarks/bench_startup.py            # 5 runs, both bytecode modes
    .venv/bin/python benchmarks/bench_startup.py --runs 9

Two modes are measured, because this development machine sets PYTHONDONTWRITEBYTECODE=1:
- "cached bytecode": PYTHONDONTWRITEBYTECODE unset and PYTHONPYCACHEPREFIX pointing at a temporary
  directory (warmed by one untimed run) - what an installed pi-compact does;
- "no bytecode cache": PYTHONDONTWRITEBYTECODE=1, so pi_compact's own modules are compiled at every
  start (the venv's packages keep the .pyc files pip wrote).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPT = "pi>"
CLI = Path(sys.executable).with_name("pi-compact")


def _tmux(socket: Path, *args: str) -> str:
    done = subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True)
    return done.stdout


def one_run(workdir: Path, env: dict[str, str], index: int, timeout_s: float = 10.0) -> float:
    """Seconds from exec to the prompt being visible (raises on timeout)."""
    socket = workdir / f"tmux-{index}.sock"  # a fresh server each run: a dying one must not be reused
    stamp = workdir / "started"
    stamp.unlink(missing_ok=True)
    command = (
        f"date +%s.%N > {stamp}; exec {CLI} --model openai/scripted "
        "--api-base http://127.0.0.1:9/v1 --api-key x --context-window 8000 --no-session"
    )
    env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    _tmux(socket, "-u", "new-session", "-d", "-s", "bench", "-x", "120", "-y", "30", *env_args,
          "-c", str(workdir), command)
    deadline = time.time() + timeout_s
    try:
        while time.time() < deadline:
            screen = _tmux(socket, "capture-pane", "-p", "-t", "bench")
            if any(line.startswith(PROMPT) for line in screen.splitlines()):
                return time.time() - float(stamp.read_text())
            time.sleep(0.01)  # each capture-pane is a process: polling faster steals CPU from the CLI
        raise TimeoutError(f"no prompt within {timeout_s}s; screen:\n{screen}")
    finally:
        _tmux(socket, "kill-server")
        time.sleep(0.5)  # let the killed CLI (and its litellm import thread) go before the next run


def measure(runs: int, cached: bool) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="pi-bench-") as tmp:
        workdir = Path(tmp)
        (workdir / "home").mkdir()
        env = {
            "HOME": str(workdir / "home"),
            "PI_CODING_AGENT_DIR": str(workdir / "agent"),
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "" if cached else "1",
        }
        if cached:
            env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
            # Fill the cache with everything a session imports, litellm included; not timed.
            subprocess.run([sys.executable, "-c", "import pi_compact.cli.entry, pi_compact.ui.repl, litellm"],
                           env={**os.environ, **env}, check=True, capture_output=True)
        return [one_run(workdir, env, index) for index in range(runs)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed", file=sys.stderr)
        return 1
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.runs} runs per mode")
    for label, cached in (("cached bytecode", True), ("no bytecode cache", False)):
        times = measure(args.runs, cached)
        shown = ", ".join(f"{t:.3f}" for t in times)
        print(f"{label:18}: median {statistics.median(times):.3f} s  (runs: {shown})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
