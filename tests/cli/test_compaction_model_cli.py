"""``--compaction-model`` in every mode: the terminal (and its ``/settings reload``), ``-p``, and
``pi-compact compact``; the flag wins over the ``compaction.model`` setting."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import coding_session, structured_summary, write_session
from rich.console import Console
from scripted_server import Reply, ScriptedServer, ToolCallReply
from typer.testing import CliRunner

from pi_compact.cancel import CancelToken
from pi_compact.cli.argv import fast_compact_args
from pi_compact.cli.compact import compact_command
from pi_compact.cli.typer_app import build_app
from pi_compact.cli.wiring import AppRuntimes
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedModel
from pi_compact.options import AppOptions
from pi_compact.settings.files import CLI_SOURCE, LoadedSettings, load_settings
from pi_compact.ui.commands import dispatch
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.state import ReplState

SMALL = "openai/small-summarizer"
SETTINGS = {
    "retry": {"maxRetries": 0},
    "compaction": {"reserveTokens": 2000, "keepRecentTokens": 150, "tokenEstimator": "chars4",
                   "model": "openai/set-in-the-file"},
    "models": {SMALL: {"contextWindow": 8000}},
}


def agent_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir(exist_ok=True)
    (directory / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    return directory


def summary_models(server: ScriptedServer) -> list[str]:
    return [r["model"] for r in server.requests if r["messages"][0]["content"] == SYSTEM_PROMPT]


def test_the_terminal_gets_the_flag_as_its_compaction_model_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir(tmp_path)))
    monkeypatch.chdir(tmp_path)
    started: list[tuple[AppRuntimes, LoadedSettings]] = []

    def fake_repl(runtimes: AppRuntimes, loaded: LoadedSettings, first_message: str | None = None) -> int:
        started.append((runtimes, loaded))
        return 0

    monkeypatch.setattr("pi_compact.ui.repl.run_repl", fake_repl)
    done = CliRunner().invoke(build_app(), ["--model", "openai/chat", "--compaction-model", SMALL])
    assert done.exit_code == 0, done.output
    ((runtimes, loaded),) = started
    assert runtimes.options.compaction_model == SMALL
    assert (loaded.settings.compaction.model, loaded.sources["compaction.model"]) == (SMALL, CLI_SOURCE)


def test_settings_reload_keeps_the_flag_over_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir(tmp_path)))
    options = AppOptions(cwd=tmp_path, model="openai/chat", session=tmp_path / "s.jsonl", compaction_model=SMALL)
    runtimes = AppRuntimes(options)
    loaded = load_settings(tmp_path, options.settings_overrides())
    console = Console(file=io.StringIO(), width=200, color_system=None)
    renderer = TerminalRenderer(console)
    session = runtimes.build(loaded.settings, renderer, model=ScriptedModel(ModelInfo("openai/chat", "openai",
                                                                                      10_000, None)))
    state = ReplState(console, renderer, runtimes, loaded, session, lambda work: work(CancelToken()), "openai/chat")
    try:
        assert dispatch(state, "/settings reload") == "continue"
        assert state.session.settings.compaction.model == SMALL
        assert state.loaded.sources["compaction.model"] == CLI_SOURCE
    finally:
        state.session.close()


def test_print_mode_summarizes_with_the_compaction_model(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    summary = Reply(text=structured_summary("small"))
    scripted_server.route = lambda body: summary if body.get("model") == "small-summarizer" else None
    scripted_server.enqueue(
        Reply(text="y" * 1600, tool_calls=(ToolCallReply("bash", {"command": "echo one"}),), prompt_tokens=1000),
        Reply(text="x" * 800, tool_calls=(ToolCallReply("bash", {"command": "echo two"}),), prompt_tokens=8_500),
        Reply(text="ALL DONE"),
    )
    cwd = tmp_path / "proj"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir(tmp_path)), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    command = [sys.executable, "-m", "pi_compact", "--model", "openai/scripted", "--api-base", scripted_server.base_url,
               "--api-key", "test", "--context-window", "10000", "--compaction-model", SMALL,
               "-p", "run the steps", "--mode", "json"]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert summary_models(scripted_server) and set(summary_models(scripted_server)) == {"small-summarizer"}
    ends = [e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "compaction_end"]
    assert [e["result"]["details"]["summaryModel"] for e in ends] == [SMALL]


def test_the_compact_command_summarizes_with_the_compaction_model(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir(tmp_path)))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    scripted_server.route = lambda body: Reply(text=structured_summary()) if body.get("model") == "small-summarizer" \
        else None
    code = compact_command(path, model="openai/scripted", api_base=scripted_server.base_url, api_key="x",
                    context_window=128_000, keep_recent_tokens=400, compaction_model=SMALL)
    assert code == 0, capsys.readouterr().err
    assert summary_models(scripted_server) == ["small-summarizer"]
    entry: dict[str, Any] = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert entry["details"]["summaryModel"] == SMALL
    captured = capsys.readouterr()
    assert f"Compacting {path} with {SMALL}…" in captured.err
    assert f"Summary by the model {SMALL} · " in " ".join(captured.out.split())


def test_the_fast_path_of_compact_takes_the_compaction_model_flag() -> None:
    assert fast_compact_args(["compact", "s.jsonl", "--compaction-model", SMALL]) == {
        "session": Path("s.jsonl"), "compaction_model": SMALL}
