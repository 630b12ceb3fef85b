"""pi's own SessionManager (0.73.1, under node) as the oracle for session files we write.

``pi_view(path, home)`` opens the file with pi and returns what pi makes of it: the leaf, the context
messages, the branch's entry types, the session name, the header, every entry id in file order and
the entry count of ``parseSessionEntries``. Skipped where node or the package is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_pi_compat import PACKAGE, PROJECT_ROOT, pi_unavailable

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
