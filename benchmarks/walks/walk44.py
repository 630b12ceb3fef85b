"""Issue 44's acceptance walk with the embedded model, as a newcomer would take it.

Usage: walk44.py OUT_DIR PI_COMPACT_EXECUTABLE [STEP_TIMEOUT_S]

Makes a fresh HOME and the scratch project under OUT_DIR (calc.py with ``return a - b`` where a + b is
wanted, its test, a ~40k-character NOTES.md whose release codename was decided at meeting 137 with "137"
also in other places, and .pi/settings.json with reserveTokens 3000 and keepRecentTokens 2000), starts the
CLI in tmux at 110x50 and sends the prompts one after another. Per step it writes what the screen showed
(stepN.txt, from capture-pane) and one JSON line to walk.jsonl: the wall time, the 1-minute load average
sampled every 10 s while the step ran, and whether it finished within STEP_TIMEOUT_S (a step still running
then is cancelled with Esc and recorded as such).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

CODENAME = "COPPER-KITE"
PROMPTS = (
    "Run the tests with python -m pytest -q, then fix the bug in calc.py so that they pass.",
    "Which files did we change, and what did the tests print?",
    "Read NOTES.md and tell me the release codename decided at meeting 137.",
    "Are you sure? Quote the line of NOTES.md that says it.",
)
ROUTINE = ("- Discussed moving logs to the new bucket.", "- Reviewed the on-call rota for the next two weeks.",
           "- Agreed to keep the nightly build green before merging.",
           "- Looked at the flaky upload test again; no decision.",
           "- Went through open questions from the support queue.", "- Checked the disk usage of the build machines.")


def make_project(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")
    (root / "test_calc.py").write_text("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 4) == 6\n\n\n"
                                       "def test_mul():\n    assert mul(2, 4) == 8\n")
    lines = ["# Team meeting notes", "", "Kept by whoever chairs; newest last."]
    number = 0
    while True:
        number += 1
        block = [f"## Meeting {number}", *(ROUTINE[(number + k) % len(ROUTINE)] for k in range(5))]
        if number == 40:  # traps: 137 as something other than the meeting
            block.append("- Ticket 137 in the tracker is about the logs bucket; it stays open.")
        if number == 137:
            block.append(f"- Decided the release codename: {CODENAME}.")
        block.append("")
        if number > 137 and len("\n".join(lines + block)) > 40_000:
            break
        lines += block
    (root / "NOTES.md").write_text("\n".join(lines) + "\n")
    (root / ".pi").mkdir(exist_ok=True)
    (root / ".pi" / "settings.json").write_text(
        json.dumps({"compaction": {"reserveTokens": 3000, "keepRecentTokens": 2000}}) + "\n")


class Walk:
    """The tmux pane of one walk (OUT_DIR/tmux.sock), the load sampled every 10 s, and walk.jsonl."""

    def __init__(self, out: Path) -> None:
        self.out, self.sock, self.log = out, str(out / "tmux.sock"), out / "walk.jsonl"
        self.samples: list[float] = []
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-10000", "-t", "w")

    @staticmethod
    def load() -> float:
        return float(Path("/proc/loadavg").read_text().split()[0])

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.load())
            self._stop.wait(10)

    def idle(self, since: int) -> bool:
        lines = self.screen()[since:].rstrip().splitlines()
        return bool(lines) and lines[-1].strip() == "pi>"

    def record(self, entry: dict[str, object]) -> None:
        with self.log.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")
        print(json.dumps(entry), flush=True)

    def wait(self, since: int, began: float, timeout: float) -> bool:
        """Wait for the prompt after ``since`` (``began``: time.time() the step started); on the timeout
        cancel with Esc. Whether it finished."""
        while not self.idle(since) and time.time() - began < timeout:
            time.sleep(1)
        if self.idle(since):
            return True
        self.tmux("send-keys", "-t", "w", "Escape")
        time.sleep(5)
        return False

    def finish_step(self, number: int, since: int, began: float, first: int, finished: bool,
                    **extra: object) -> None:
        seen = self.samples[first:] or [self.load()]
        shown = self.screen()[since:]
        (self.out / f"step{number}.txt").write_text(shown)
        self.record({"step": number, "prompt": PROMPTS[number - 1], "seconds": round(time.time() - began, 1),
                     "finished": finished, **extra, "load_min": min(seen), "load_max": max(seen),
                     "load_mean": round(sum(seen) / len(seen), 2), "codename_on_screen": CODENAME in shown})

    def step(self, number: int, timeout: float) -> None:
        """Send prompt ``number`` and record it."""
        since, first, began = len(self.screen().rstrip()), len(self.samples), time.time()
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        self.tmux("send-keys", "-t", "w", "-l", PROMPTS[number - 1])
        self.tmux("send-keys", "-t", "w", "Enter")
        time.sleep(2)
        self.finish_step(number, since, began, first, self.wait(since, began, timeout), uptime_at_start=uptime)

    def close(self) -> None:
        (self.out / "screen.txt").write_text(self.screen())
        self.tmux("send-keys", "-t", "w", "C-d")
        time.sleep(3)
        self.tmux("kill-server")
        self._stop.set()


def main() -> None:
    out, cli = Path(sys.argv[1]).resolve(), sys.argv[2]
    step_timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 1500.0
    out.mkdir(parents=True, exist_ok=True)
    home, project = out / "home", out / "proj"
    home.mkdir(exist_ok=True)
    make_project(project)
    walk = Walk(out)
    env = {"HOME": str(home), "TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PATH": os.environ["PATH"]}
    began = time.monotonic()
    walk.tmux("-u", "new-session", "-d", "-s", "w", "-x", "110", "-y", "50", "-c", str(project),
              *(part for key, value in env.items() for part in ("-e", f"{key}={value}")),
              "sh", "-c", f"{cli} 2> {out / 'stderr'}; echo $? > {out / 'exit'}")
    while "pi>" not in walk.screen() and time.monotonic() - began < 600:
        time.sleep(0.5)
    walk.record({"step": "start", "seconds": round(time.monotonic() - began, 1), "load": walk.load(),
                 "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()})
    for number in range(1, len(PROMPTS) + 1):
        walk.step(number, step_timeout)
    walk.close()


if __name__ == "__main__":
    main()
