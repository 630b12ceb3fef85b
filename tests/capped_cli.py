"""The real CLI in a subprocess with its memory capped (``RLIMIT_AS``) and a time limit, in a throwaway HOME and
agent directory, so an attack that would fill memory fails the test instead of taking the machine down.

    done = run_capped(tmp_path, ["--model", "lab/m", "-p", "hi"], cwd=project, models={...})
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pi_compact

ADDRESS_SPACE = 1 << 30  # 1 GiB: the CLI runs in about 300 MB of address space; the attacks wanted several GB
PACKAGE_ROOT = str(Path(pi_compact.__file__).resolve().parents[1])


def _capped(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def agent_dir(tmp_path: Path) -> Path:
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    return agent


def run_capped(
    tmp_path: Path,
    args: Sequence[str],
    *,
    cwd: Path,
    models: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    limit: int = ADDRESS_SPACE,
    timeout: float = 60,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``pi-compact ARGS`` in ``cwd``; HOME is ``tmp_path/home``, the agent directory ``~/.pi/agent`` in it."""
    agent = agent_dir(tmp_path)
    merged = {"retry": {"maxRetries": 0}, **(settings or {})}
    (agent / "settings.json").write_text(json.dumps(merged), encoding="utf-8")
    if models is not None:
        (agent / "models.json").write_text(json.dumps(models), encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_", "PYTHON"))}
    extra = dict(env or {})
    # This checkout's package first, whatever else the test puts on the path.
    path = os.pathsep.join(p for p in (PACKAGE_ROOT, extra.pop("PYTHONPATH", "")) if p)
    base.update({"HOME": str(tmp_path / "home"), "PI_CODING_AGENT_DIR": str(agent),
                 "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "PYTHONPATH": path,
                 **extra})
    return subprocess.run([sys.executable, "-m", "pi_compact.cli", *args], cwd=cwd, env=base, capture_output=True,
                          text=True, timeout=timeout, input=stdin, stdin=None if stdin is not None else
                          subprocess.DEVNULL, preexec_fn=_capped(limit))
