"""``--thinking``: a level outside pi's six is a usage error; a level reaches the session (through the real
CLI, against the scripted server) and is clamped to what the model can do, with one notice. ``pi-compact
compact FILE`` summarizes at the file's latest level, as the terminal would (against the fake Anthropic server)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from builders import coding_session, structured_summary, thinking_level_change, write_session
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import text_reply
from scripted_server import Reply, ScriptedServer

from pi_compact.cli.choices import CompactOptions
from pi_compact.cli.compact import run_compact
from pi_compact.cli.start import StartFlags, start
from pi_compact.errors import RAISE_ERRORS_VARIABLE
from pi_compact.settings import CompactionSettings, RetrySettings, Settings


def test_an_unknown_level_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(RAISE_ERRORS_VARIABLE, raising=False)
    code = start(StartFlags(prompt="hi", no_session=True, thinking="max"))
    assert code == 2
    assert capsys.readouterr().err == (
        "pi-compact: --thinking must be one of off, minimal, low, medium, high, xhigh, got 'max'.\n")


def test_the_flag_reaches_the_session_and_is_clamped_with_one_notice(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.enqueue(Reply(text="Hi."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "HOME": str(tmp_path)})
    session = tmp_path / "s.jsonl"
    command = [sys.executable, "-m", "pi_compact", "--model", "openai/scripted", "--api-base",
               scripted_server.base_url, "--api-key", "test", "--context-window", "10000", "--session", str(session),
               "--thinking", "high", "-p", "hi"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "Hi.\n"), done.stderr
    assert done.stderr == "pi-compact: Thinking level high is not available on scripted (it does off); using off.\n"
    entries = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    assert [e["thinkingLevel"] for e in entries if e.get("type") == "thinking_level_change"] == ["off"]


# The cap is the session's plan (``compaction.window``), the budget inside it, as the terminal's requests send
# them: the reserve less the 2 % margin (12,384), or the budget and 8,192 for the answer after it if more.
@pytest.mark.parametrize(("levels", "default", "budget", "cap"), [
    (("low", "high"), None, 16_384, 24_576),  # the latest level
    (("high", "off"), "high", None, 12_384),  # off: the summary does not think either
    ((), None, 8192, 16_384),  # none recorded: pi's default, medium
    ((), "low", 2048, 12_384),  # else defaultThinkingLevel, as the terminal resumes the file
])  # fmt: skip
def test_the_compact_command_summarizes_at_the_sessions_thinking_level(
    tmp_path: Path, levels: tuple[str, ...], default: str | None, budget: int | None, cap: int
) -> None:
    entries = coding_session()
    if levels:  # one level before the conversation, the latest after it
        entries[0]["parentId"] = "level-0"
        entries = [thinking_level_change(levels[0], id="level-0", parent=None), *entries,
                   thinking_level_change(levels[1], id="level-1", parent=entries[-1]["id"])]
    path = tmp_path / "session.jsonl"
    write_session(path, entries)
    settings = Settings(compaction=CompactionSettings(keep_recent_tokens=400, reserve_tokens=16_384),
                        retry=RetrySettings(enabled=False), default_thinking_level=default)
    with FakeAnthropicServer().start() as server:
        server.enqueue(text_reply(structured_summary()))
        options = CompactOptions(path, model="anthropic/claude-sonnet-4-5", api_base=server.base_url, api_key="test")
        assert run_compact(options, settings) == 0
        [record] = server.records
    assert record.error is None
    thinking = record.body.get("thinking")
    assert (thinking or {}).get("budget_tokens") == budget
    stated = re.search(r"Keep the whole summary under about (\d+) tokens", json.dumps(record.body["messages"]))
    # With thinking the request keeps the plan's cap whatever length the note asks; without, the note's length.
    assert record.body["max_tokens"] == (int(stated.group(1)) if stated and not budget else cap)
