"""pi's own SessionManager (0.73.1, under node) as the oracle for session files we write.

``pi_view(path, home)`` opens the file with pi and returns what pi makes of it: the leaf, the context
messages, the branch's entry types, the session name, the header, every entry id in file order and
the entry count of ``parseSessionEntries``. Skipped where node or the package is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # where npm installs pi (node_modules)
PACKAGE = "@mariozechner/pi-coding-agent"


@lru_cache(maxsize=1)
def pi_unavailable() -> str | None:
    """Why pi cannot be run here, or None when it can."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    probe = subprocess.run(
        [node, "--input-type=module", "-e", f"console.log(import.meta.resolve('{PACKAGE}'))"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    if probe.returncode != 0:
        return f"{PACKAGE} is not installed (npm install --no-save {PACKAGE}@0.73.1 in {PROJECT_ROOT})"
    return None


PI_VIEW_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ SessionManager, parseSessionEntries }} from "{PACKAGE}";
const [file, dir] = process.argv.slice(1);
const manager = SessionManager.open(file, dir);
const context = manager.buildSessionContext();
process.stdout.write(JSON.stringify({{
  leafId: manager.getLeafId(),
  messages: context.messages,
  types: manager.getBranch().map((entry) => entry.type),
  branchIds: manager.getBranch().map((entry) => entry.id),
  name: manager.getSessionName() ?? null,
  header: manager.getHeader(),
  ids: manager.getEntries().map((entry) => entry.id),
  parsed: parseSessionEntries(readFileSync(file, "utf8")).length,
}}));
"""


def pi_view(path: Path, home: Path) -> dict[str, Any]:
    """What pi reads from the session file at ``path`` (``home``: a scratch directory for pi)."""
    reason = pi_unavailable()
    if reason is not None:
        pytest.skip(reason)
    env = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(home / "agent")}
    done = subprocess.run(
        ["node", "--input-type=module", "-e", PI_VIEW_SCRIPT, str(path), str(home)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 0, done.stderr
    view: dict[str, Any] = json.loads(done.stdout)
    return view
