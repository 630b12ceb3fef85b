"""``pi-compact compact FILE`` reports the size after the compaction as the next request will be counted:
the system prompt and tool definitions included, as the terminal's figures are (issue 31).

The scripted server counts what each request carries (messages and tool definitions, a token per four
characters) and what each reply holds, as a provider's usage does; the session is written by the real
CLI's print mode.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from scripted_server import Reply, ScriptedServer, counted_prompt_tokens

from pi_compact.compaction.prompts import HISTORY_HEADINGS

WINDOW = "20000"
TEXT = "The ledger module keeps one row per transfer and reconciles them nightly against the bank export. "


def pi(server: ScriptedServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(cwd.parent / "agent"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    command = [sys.executable, "-m", "pi_compact", *args, "--model", "openai/scripted", "--api-base",
               server.base_url, "--api-key", "test", "--context-window", WINDOW]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_after_figure_of_compact_is_within_ten_percent_of_the_next_requests_size(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    session = tmp_path / "s.jsonl"
    for turn in range(4):
        scripted_server.enqueue(Reply(text=f"Answer {turn}: " + TEXT * 12, count_tokens=True))
        done = pi(scripted_server, cwd, "-p", f"Question {turn}: " + TEXT * 12, "--session", str(session))
        assert done.returncode == 0, done.stderr
    summary = "\n".join(f"{h}\n- the ledger work, turn notes" for h in HISTORY_HEADINGS)
    scripted_server.enqueue(Reply(text=summary, count_tokens=True))
    done = pi(scripted_server, cwd, "compact", str(session), "--keep-recent-tokens", "300")
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Context ([\d,]+) → ~([\d,]+) tokens", done.stdout)
    assert found is not None, done.stdout
    after = int(found.group(2).replace(",", ""))
    scripted_server.enqueue(Reply(text="ok", count_tokens=True))
    done = pi(scripted_server, cwd, "-p", "and now?", "--session", str(session))
    assert done.returncode == 0, done.stderr
    counted = counted_prompt_tokens(scripted_server.requests[-1]) - len("and now?") // 4
    assert abs(after - counted) <= 0.1 * counted, (after, counted)
