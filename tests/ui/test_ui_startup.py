"""The prompt comes first: what the interactive mode imports before it can draw the prompt.

Checked in a fresh interpreter. rich, the agent stack and litellm are loaded by the REPL's loader
thread after the prompt is up (``benchmarks/bench_startup.py`` measures the time to the prompt).
"""

from __future__ import annotations

import json
import subprocess
import sys

LATER = ("litellm", "rich", "pi_compact.agent.session", "pi_compact.compaction", "pi_compact.ui.renderer")


def test_the_repl_imports_nothing_heavy_before_the_prompt() -> None:
    code = (
        "import json, sys\n"
        "import pi_compact.cli.entry, pi_compact.cli.wiring, pi_compact.settings.files, pi_compact.ui.repl\n"
        f"print(json.dumps([m for m in {list(LATER)!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
