"""``pi-compact -p PROMPT`` as a user runs it: a real subprocess (``python -m pi_compact``) against the
scripted server, with settings and sessions under ``PI_CODING_AGENT_DIR=tmp_path``.

Each subprocess pays litellm's import (~5 s), so only three behaviours run as a subprocess (text
answer, provider failure, JSON events); other flags go through the same CLI parser in-process with
typer's CliRunner, and the session-selection rules are covered by test_agent_sessions.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Reply, ScriptedServer, ToolCallReply, server_error_reply
from typer.testing import CliRunner, Result

from pi_compact.cli.typer_app import build_app

SETTINGS_FILE = {
    "retry": {"maxRetries": 0},
    "compaction": {"reserveTokens": 2000, "keepRecentTokens": 150, "tokenEstimator": "chars4"},
}
WINDOW = "10000"
OVER_THRESHOLD = 8_500


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    """The agent directory (with the settings file) and the project directory to run in."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir(exist_ok=True)
    (agent_dir / "settings.json").write_text(json.dumps(SETTINGS_FILE), encoding="utf-8")
    cwd = tmp_path / "proj"
    cwd.mkdir(exist_ok=True)
    return agent_dir, cwd


def _model_args(server: ScriptedServer) -> list[str]:
    return ["--model", "openai/scripted", "--api-base", server.base_url, "--api-key", "test",
            "--context-window", WINDOW]


def _pi(server: ScriptedServer, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    agent_dir, cwd = _dirs(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    command = [sys.executable, "-m", "pi_compact", *_model_args(server), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _json_lines(stdout: str) -> list[dict[str, Any]]:
    lines = stdout.splitlines()
    assert lines, "no output"
    events = [json.loads(line) for line in lines]
    assert all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in events)
    return events


def _long_task(server: ScriptedServer, *, compacts: bool = True) -> None:
    """Two tool calls; the second reply crosses the threshold, so the loop compacts (summarizing the
    first part of the turn), then answers."""
    prefix_summary = "## Original Request\nrun the steps\n## Early Progress\n- ran one\n## Context for Suffix\n- ok"
    server.enqueue(
        # Text worth summarizing: a compaction that would not shrink the context is not written.
        Reply(text="y" * 1600, tool_calls=(ToolCallReply("bash", {"command": "echo one"}),), prompt_tokens=1000),
        Reply(text="x" * 800, tool_calls=(ToolCallReply("bash", {"command": "echo two"}),),
              prompt_tokens=OVER_THRESHOLD),
        *([Reply(text=prefix_summary)] if compacts else []),
        Reply(text="ALL DONE"),
    )


def test_print_mode_prints_the_answer_and_exits_zero(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    scripted_server.enqueue(Reply(text="The answer is 42."))
    done = _pi(scripted_server, tmp_path, "-p", "What is the answer?")
    assert (done.returncode, done.stdout, done.stderr) == (0, "The answer is 42.\n", "")
    sessions = list((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1


def test_print_mode_provider_failure_exits_non_zero_with_one_line(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.enqueue(server_error_reply(500, repeat=True))
    done = _pi(scripted_server, tmp_path, "-p", "Hello?")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "pi-compact: 500 The server had an error while processing your request (500)\n"
    assert len(scripted_server.requests) == 1  # maxRetries 0 from the settings file


def test_json_mode_emits_one_typed_object_per_line_with_pi_compaction_shapes(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    _long_task(scripted_server)
    done = _pi(scripted_server, tmp_path, "-p", "Run the steps.", "--mode", "json", "--no-session")
    assert (done.returncode, done.stderr) == (0, "")
    events = _json_lines(done.stdout)
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    for kind in ("message_start", "message_update", "message_end", "tool_execution_start", "tool_execution_end"):
        assert kind in types
    starts = [e for e in events if e["type"] == "compaction_start"]
    ends = [e for e in events if e["type"] == "compaction_end"]
    assert starts == [{"type": "compaction_start", "reason": "threshold"}]
    assert len(ends) == 1 and set(ends[0]) == {"type", "reason", "result", "aborted", "willRetry"}
    assert (ends[0]["reason"], ends[0]["aborted"], ends[0]["willRetry"]) == ("threshold", False, False)
    assert set(ends[0]["result"]) == {"summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter", "details"}
    assert types.index("compaction_start") < types.index("compaction_end") < len(types) - 1
    final = [e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"][-1]
    assert final["message"]["content"] == [{"type": "text", "text": "ALL DONE"}]
    assert not (tmp_path / "agent" / "sessions").exists()


# ---- in-process through the real CLI parser (no subprocess: same code path after `main()`) ----------


def _cli(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    agent_dir, cwd = _dirs(tmp_path)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(build_app(), [*_model_args(server), *args])


def test_extension_flag_loads_a_hook_that_cancels_compaction(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extension = tmp_path / "no compaction.py"
    extension.write_text("def session_before_compact(event):\n    return {'cancel': True}\n", encoding="utf-8")
    _long_task(scripted_server)
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Run the steps.", "--mode", "json",
                "--extension", str(extension))
    assert done.exit_code == 0, done.output
    ends = [e for e in _json_lines(done.stdout) if e["type"] == "compaction_end"]
    assert ends == [{"type": "compaction_end", "reason": "threshold", "result": None, "aborted": True,
                     "willRetry": False}]
    [session] = list((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    assert not any(json.loads(line)["type"] == "compaction" for line in session.read_text().splitlines())


def test_missing_extension_file_is_a_usage_error(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere.py"
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Hi", "--extension", str(missing))
    assert done.exit_code == 2
    assert done.stderr == f"pi-compact: Extension file {missing} does not exist.\n"
    assert scripted_server.requests == []


def test_no_auto_compact_flag_turns_off_threshold_compaction(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _long_task(scripted_server, compacts=False)
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Run the steps.", "--mode", "json", "--no-session",
                "--no-auto-compact")
    assert done.exit_code == 0, done.output
    types = [e["type"] for e in _json_lines(done.stdout)]
    assert "compaction_start" not in types and "compaction_end" not in types
    assert scripted_server.pending == 0 and len(scripted_server.requests) == 3


def test_json_mode_opens_and_closes_every_message(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("ls", {}),)), Reply(text="Listed."))
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "List files.", "--mode", "json", "--no-session")
    assert done.exit_code == 0, done.output
    events = _json_lines(done.stdout)
    starts = [e["role"] for e in events if e["type"] == "message_start"]
    ends = [e["message"]["role"] for e in events if e["type"] == "message_end"]
    assert starts == ends == ["user", "assistant", "toolResult", "assistant"]


def test_missing_api_key_fails_with_one_line_and_closes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir, cwd = _dirs(tmp_path)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(cwd)
    done = CliRunner().invoke(build_app(), ["--model", "openai/gpt-4o", "-p", "Hi", "--mode", "json", "--no-session"])
    assert done.exit_code == 1
    assert done.stderr == (
        "pi-compact: Model openai/gpt-4o needs an API key: set the environment variable OPENAI_API_KEY "
        "and try again.\n"
    )
    events = _json_lines(done.stdout)
    assert [e["type"] for e in events] == [
        "agent_start", "message_start", "message_end", "message_start", "message_end", "agent_end"
    ]
    reason = done.stderr.removeprefix("pi-compact: ").strip()
    # The failure is recorded as a failed assistant reply (as pi records provider errors).
    failed = events[4]["message"]
    assert (failed["role"], failed["stopReason"], failed["errorMessage"]) == ("assistant", "error", reason)
    assert events[-1]["errorMessage"] == reason


def test_ctrl_c_during_compaction_after_the_answer_says_so_and_exits_130(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        # Text worth summarizing: a compaction that would not shrink the context is not written.
        Reply(text="y" * 1600, tool_calls=(ToolCallReply("bash", {"command": "echo one"}),), prompt_tokens=1000),
        Reply(text="THE ANSWER " + "x" * 800, prompt_tokens=OVER_THRESHOLD),  # crosses the threshold
        Reply(text="never sent", delay_s=30, repeat=True),  # the summary: still waiting when Ctrl-C comes
    )
    agent_dir, cwd = _dirs(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    command = [sys.executable, "-m", "pi_compact", *_model_args(scripted_server), "-p", "Run it."]
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        deadline = time.monotonic() + 90
        while len(scripted_server.requests) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert len(scripted_server.requests) == 3, "the compaction never started"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stdout.startswith("THE ANSWER ")  # the answer was complete and is in the session file
    assert stderr == "pi-compact: Auto-compaction cancelled; nothing was written.\n"
    [session] = list((tmp_path / "agent" / "sessions").rglob("*.jsonl"))
    assert not any(json.loads(line)["type"] == "compaction" for line in session.read_text().splitlines())


@pytest.mark.parametrize("mode", ["text", "json"])
def test_settings_that_cannot_fit_the_window_are_fitted_with_one_warning_naming_the_file(
    mode: str, scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir, cwd = _dirs(tmp_path)
    settings_file = agent_dir / "settings.json"
    compaction = {"reserveTokens": 20000, "keepRecentTokens": 1e36}
    settings_file.write_text(json.dumps({**SETTINGS_FILE, "compaction": compaction}))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(cwd)
    scripted_server.enqueue(Reply(text="Fine.", prompt_tokens=1000))
    args = [*_model_args(scripted_server), "-p", "Hi", "--mode", mode, "--no-session"]
    done = CliRunner().invoke(build_app(), args)
    assert done.exit_code == 0, done.output
    assert done.stderr == (
        f"warning: Ignoring compaction.keepRecentTokens in {settings_file}: expected a whole number > 0 and at most "
        "1,000,000,000, got 1e+36.\n"
        f"warning: compaction.reserveTokens (20000) in {settings_file} is not smaller than the 10000-token context "
        "window of openai/scripted, so auto-compaction would run before every turn; using 2500 instead.\n"
    )  # the default keepRecentTokens (20,000) is fitted to the window too, silently: it is not the user's
    assert len(scripted_server.requests) == 1  # 1,000 tokens are under the fitted threshold: no compaction


def test_max_turns_flag_stops_print_mode_after_three_replies_and_exits_one(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(*[Reply(tool_calls=(ToolCallReply("bash", {"command": f"echo {i}"}),)) for i in range(6)])
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Count.", "--no-session", "--max-turns", "3")
    assert done.exit_code == 1, done.output
    assert len(scripted_server.requests) == 3
    assert done.stderr.startswith("pi-compact: Stopped after 3 model turns")
    assert done.stderr.count("\n") == 1


def test_max_turns_flag_stops_json_mode_with_the_reason_on_stderr(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(*[Reply(tool_calls=(ToolCallReply("bash", {"command": f"echo {i}"}),)) for i in range(6)])
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Count.", "--mode", "json", "--no-session",
                "--max-turns", "3")
    assert done.exit_code == 1, done.output
    assert len(scripted_server.requests) == 3
    [end] = [e for e in _json_lines(done.stdout) if e["type"] == "agent_end"]
    assert end["errorMessage"].startswith("Stopped after 3 model turns")
    assert done.stderr.startswith("pi-compact: Stopped after 3 model turns")


def test_an_empty_print_prompt_is_refused_before_any_request(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "  ", "--no-session")
    assert done.exit_code == 2
    assert done.stderr.startswith("pi-compact: -p needs a prompt: it was empty.")
    assert scripted_server.requests == []


def test_text_mode_says_on_stderr_when_a_compaction_summary_was_built_without_a_model(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(
        Reply(text="y" * 1600, tool_calls=(ToolCallReply("bash", {"command": "echo one"}),), prompt_tokens=1000),
        Reply(text="x" * 800, tool_calls=(ToolCallReply("bash", {"command": "echo two"}),),
              prompt_tokens=OVER_THRESHOLD),
        server_error_reply(500),  # the summary request fails: the model-free summary is written instead
        Reply(text="ALL DONE"),
    )
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Run the steps.", "--no-session")
    assert done.exit_code == 0, done.output
    assert done.stdout == "ALL DONE\n"
    assert done.stderr.count("pi-compact: Auto-compaction: the summary was built without the model (") == 1


def _counting(server: ScriptedServer, replies: int) -> None:
    server.enqueue(*[Reply(tool_calls=(ToolCallReply("bash", {"command": f"echo {i}"}),)) for i in range(replies)],
                   Reply(text="Counted."))


def test_print_mode_without_max_turns_stops_at_its_default_of_fifty_replies(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_compact.ui.print_mode import PRINT_MAX_TURNS

    assert PRINT_MAX_TURNS == 50
    _counting(scripted_server, PRINT_MAX_TURNS + 5)
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Count.", "--no-session")
    assert done.exit_code == 1, done.output
    assert len(scripted_server.requests) == PRINT_MAX_TURNS
    assert done.stderr == ("pi-compact: Stopped after 50 model turns (the limit is 50; raise it with --max-turns N or "
                           "the maxTurns setting); the tool calls of the last reply were not run. Send a prompt to "
                           "go on.\n")


def test_print_mode_default_cap_is_raised_by_the_flag(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _counting(scripted_server, 53)
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Count.", "--no-session", "--max-turns", "60")
    assert done.exit_code == 0, done.output
    assert len(scripted_server.requests) == 54 and done.stdout == "Counted.\n"


def test_print_mode_default_cap_is_raised_by_the_max_turns_setting(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir, cwd = _dirs(tmp_path)
    (agent_dir / "settings.json").write_text(json.dumps({**SETTINGS_FILE, "maxTurns": 52}))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(cwd)
    _counting(scripted_server, 53)
    done = CliRunner().invoke(build_app(), [*_model_args(scripted_server), "-p", "Count.", "--no-session"])
    assert done.exit_code == 1, done.output
    assert len(scripted_server.requests) == 52
    assert done.stderr.startswith("pi-compact: Stopped after 52 model turns (the limit is 52;")


def test_print_mode_stops_a_nine_call_cycle_at_its_fourth_round(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ("quota", "refill", "shard", "store", "bucket", "limits", "rates", "tenant", "window")
    cycle = [Reply(tool_calls=(ToolCallReply("read", {"path": f"{n}.py"}),)) for n in names]
    scripted_server.enqueue(*(cycle * 17))  # the run that went on for 151 requests
    done = _cli(scripted_server, tmp_path, monkeypatch, "-p", "Carry on.", "--no-session")
    assert done.exit_code == 1, done.output
    assert len(scripted_server.requests) == 36
    assert done.stderr.startswith("pi-compact: Stopped: the model made the same 9 calls (`read quota.py`, ")
    assert done.stderr.count("\n") == 1
