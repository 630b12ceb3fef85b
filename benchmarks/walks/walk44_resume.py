"""Carry on a walk44.py run whose driver was stopped while a step still ran (its step timeout would
have cancelled a step that was only slow): wait for that step to end, record it as walk44.py does
(its wall time from the given start), then send the remaining prompts.

Usage: walk44_resume.py OUT_DIR STEP STEP_STARTED_EPOCH_S [STEP_TIMEOUT_S]
"""

from __future__ import annotations

import sys
from pathlib import Path

from walk44 import PROMPTS, Walk


def main() -> None:
    out, running, started = Path(sys.argv[1]).resolve(), int(sys.argv[2]), float(sys.argv[3])
    step_timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 2400.0
    walk = Walk(out)
    since = walk.screen().rfind("pi> " + PROMPTS[running - 1])
    walk.finish_step(running, since, started, 0, walk.wait(since, started, step_timeout), resumed=True)
    for number in range(running + 1, len(PROMPTS) + 1):
        walk.step(number, step_timeout)
    walk.close()


if __name__ == "__main__":
    main()
