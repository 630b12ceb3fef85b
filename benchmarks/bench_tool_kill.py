"""How often ``kill -9`` in the middle of a ``write`` or ``edit`` tool call leaves a user's file truncated.

For each tool, a child process runs the real tool (through ``run_tool``) on one file in a loop,
alternating between two versions of it (``write``: 1 MB of ``A`` / 512 KB of ``B``; ``edit``: a 1 MB
file whose marker flips between ``<<one>>`` and ``<<two>>``). The parent waits until the child is
running, waits a random 0-30 ms and kills it with SIGKILL, then checks the file: it must be exactly
the starting contents or one of the two versions. A file that is anything else (empty, cut short) is
counted as truncated and restored before the next round. In every other round the wait ends early,
and the kill comes at once, when a write is seen under way (a new file beside the target, or the
target at a size no whole version has), so half the kills aim at the dangerous moments and half fall
at random instants. Temporary files left next to the user's file
by a kill (never a data loss, just litter) are counted too.

Usage: ``python benchmarks/bench_tool_kill.py [--kills N] [--size BYTES] [--seed S]``
(``--kills`` per tool, default 100). The last line is ``user files truncated: N`` over both tools.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import sys
from pathlib import Path
from pi_compact.agent.tools import EditTool, ToolContext, WriteTool, run_tool

tool_name, target, size = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
ctx = ToolContext(cwd=target.parent)
versions = ["A" * size, "B" * (size // 2)]
edits = [("<<one>>", "<<two>>"), ("<<two>>", "<<one>>")]
# An earlier round may have left either marker in place: start from the one that is there.
turn = 0 if tool_name == "write" or b"<<one>>" in target.read_bytes() else 1
print("ready", flush=True)
while True:
    if tool_name == "write":
        out = run_tool(WriteTool(), {"path": target.name, "content": versions[turn % 2]}, ctx)
    else:
        old, new = edits[turn % 2]
        out = run_tool(EditTool(), {"path": target.name, "oldText": old, "newText": new}, ctx)
    if out.is_error:
        sys.exit("tool failed: " + out.text)
    turn += 1
"""


def wait_for_a_write(target: Path, sizes: set[int], present: set[str], seconds: float) -> None:
    """Sleep up to ``seconds``, returning early once a new file (not in ``present``) appears beside the
    target or the target has a size no whole version has: a write is under way."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not present.issuperset(os.listdir(target.parent)) or target.stat().st_size not in sizes:
            return


def run_tool_kills(tool_name: str, kills: int, size: int, rng: random.Random) -> tuple[int, int, int]:
    """``(truncated, temporaries left, completed calls seen)`` after ``kills`` rounds for one tool."""
    with tempfile.TemporaryDirectory(prefix="bench-tool-kill-") as folder:
        target = Path(folder) / "user_file.txt"
        if tool_name == "write":
            initial = b"original\n"
            valid = {initial, b"A" * size, b"B" * (size // 2)}
        else:
            initial = b"x" * size + b"<<one>>" + b"y" * 100
            valid = {initial, initial.replace(b"<<one>>", b"<<two>>")}
        target.write_bytes(initial)
        sizes = {len(version) for version in valid}
        truncated = 0
        changed = 0
        for round_no in range(kills):
            present = set(os.listdir(target.parent))  # temporaries an earlier kill left do not count
            before = target.read_bytes()
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, tool_name, str(target), str(size)], stdout=subprocess.PIPE, text=True
            )
            assert child.stdout is not None
            if child.stdout.readline() != "ready\n":
                raise SystemExit(f"the {tool_name} child did not start")
            if round_no % 2:
                wait_for_a_write(target, sizes, present, rng.uniform(0.0, 0.03))
            else:
                time.sleep(rng.uniform(0.0, 0.03))
            child.kill()
            child.wait()
            child.stdout.close()
            content = target.read_bytes()
            if content not in valid:
                truncated += 1
                target.write_bytes(initial)
            elif content != before:
                changed += 1
        leftovers = sum(1 for path in Path(folder).iterdir() if path != target)
        return truncated, leftovers, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="kills per tool (default 100)")
    parser.add_argument("--size", type=int, default=1 << 20, help="size of the written file in bytes")
    parser.add_argument("--seed", type=int, default=8)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    total = 0
    start = time.monotonic()
    for tool_name in ("write", "edit"):
        truncated, leftovers, changed = run_tool_kills(tool_name, options.kills, options.size, rng)
        total += truncated
        print(
            f"{tool_name}: {options.kills} kills, {truncated} truncated, {changed} left a new version, "
            f"{leftovers} temporary files left behind"
        )
    print(f"time: {time.monotonic() - start:.1f} s")
    print(f"user files truncated: {total}")


if __name__ == "__main__":
    main()
