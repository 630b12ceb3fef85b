"""The product's dry-run plan of an eval transcript with the settings the eval data was cut for (chars/4,
keep 1,500, reserve 4,096, a 16,384-token window), run as a user would run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def dry_run_plan(transcript: Path, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "pi_compact", "compact", str(transcript), "--dry-run", "--json",
         "--keep-recent-tokens", "1500", "--reserve-tokens", "4096", "--context-window", "16384",
         "--token-estimator", "chars4"],
        capture_output=True, text=True, timeout=60, cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    plan: dict[str, Any] = json.loads(done.stdout)["plan"]
    return plan
