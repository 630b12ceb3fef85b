"""The approval mode: the pure policy, the terminal question, and a declined call through the real CLI."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from scripted_server import Reply, ScriptedServer, ToolCallReply
from typer.testing import CliRunner

from pi_compact.agent.approval import DECLINED, ApprovalGate, Decision, needs_approval
from pi_compact.agent.loop import run_tool_calls
from pi_compact.agent.tools import ToolContext, default_tools
from pi_compact.cancel import CancelToken
from pi_compact.cli.typer_app import build_app
from pi_compact.ui.approval_prompt import KeyTap, TerminalAsk
from pi_compact.ui.renderer import TerminalRenderer


def test_each_mode_asks_about_its_tools_only() -> None:
    asked = {mode: [t for t in ("read", "write", "edit", "bash", "grep") if needs_approval(mode, t)]
             for mode in ("none", "edits", "all")}
    assert asked == {"none": [], "edits": ["write", "edit"], "all": ["write", "edit", "bash"]}


def test_always_is_remembered_for_that_tool_for_the_session() -> None:
    answers: list[Decision] = ["always", "no"]
    questions: list[str] = []

    def ask(name: str, args: Mapping[str, Any], cancel: CancelToken | None) -> Decision:
        questions.append(name)
        return answers.pop(0)

    gate = ApprovalGate("all", ask)
    assert gate.allows("edit", {}) and gate.allows("edit", {})
    assert not gate.allows("bash", {})
    assert gate.allows("read", {})
    assert questions == ["edit", "bash"]


def test_a_cancelled_turn_declines_without_asking() -> None:
    token = CancelToken()
    token.cancel()
    gate = ApprovalGate("edits", lambda *_: pytest.fail("asked"))
    assert not gate.allows("write", {"path": "x"}, token)


def test_the_question_shows_the_edit_as_a_diff_and_takes_a_key(tmp_path: Path) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, color_system=None)
    keys = iter([None, "n"])
    ask = TerminalAsk(console, TerminalRenderer(console), tmp_path, KeyTap(), read_key=lambda _t: next(keys))
    assert ask("edit", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}, CancelToken()) == "no"
    screen = buffer.getvalue()
    assert "edit a.py" in screen and "-x = 1" in screen and "+x = 2" in screen
    assert "Allow this edit? y yes · n no · a always for this session" in screen
    assert "Declined; the model is told the call was not run." in screen


def test_the_key_tap_takes_keys_only_while_a_question_waits() -> None:
    now = [100.0]
    tap = KeyTap(clock=lambda: now[0])
    assert not tap(b"y")
    now[0] += 1
    tap.opened(True)
    now[0] += 1  # a deliberate key: pressed a while after the question appeared
    assert tap(b"y") and tap.next_key(0.1) == "y"
    tap.opened(False)
    now[0] += 1
    assert not tap(b"n")


def test_print_mode_declines_an_edit_it_cannot_ask_about(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "settings.json").write_text(json.dumps({"approve": "edits", "retry": {"maxRetries": 0}}))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(project)
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("edit", {"path": "a.py", "oldText": "x = 1",
                                                                     "newText": "x = 2"}),)))
    scripted_server.enqueue(Reply(text="Understood, not changed."))
    done = CliRunner().invoke(build_app(), [
        "--model", "openai/scripted", "--api-base", scripted_server.base_url, "--api-key", "k",
        "--context-window", "10000", "--no-session", "-p", "change x"])
    assert done.exit_code == 0, done.output
    assert "pi-compact: declined the edit call: the approval mode asks first, and -p cannot ask." in done.output
    assert (project / "a.py").read_text() == "x = 1\n"
    results = [m for m in scripted_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0]["content"] == DECLINED


def test_approve_flag_overrides_the_setting_and_rejects_unknown_values() -> None:
    done = CliRunner().invoke(build_app(), ["--approve", "some", "-p", "hi"])
    assert done.exit_code == 2
    assert "--approve must be none, edits or all, got 'some'." in done.output


def _edit_call(old: str) -> dict[str, Any]:
    call = {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "a.py", "oldText": old,
                                                                          "newText": "x = 2"}}
    return {"role": "assistant", "content": [call]}


def test_an_edit_whose_old_text_is_not_in_the_file_is_refused_without_asking(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    results: list[dict[str, Any]] = []
    ran = run_tool_calls(_edit_call("x = 3"), default_tools(), ToolContext(cwd=tmp_path), lambda _e: None,
                         results.append, approve=lambda *_: pytest.fail("asked about an edit that cannot apply"))
    assert ran and results[0]["isError"]
    assert results[0]["content"][0]["text"] == "oldText not found in a.py; read the file and copy the text exactly."
    asked: list[str] = []
    run_tool_calls(_edit_call("x = 1"), default_tools(), ToolContext(cwd=tmp_path), lambda _e: None,
                   results.append, approve=lambda name, *_: asked.append(name) is None)
    assert asked == ["edit"] and (tmp_path / "a.py").read_text() == "x = 2\n"  # one that applies is still asked


def test_print_mode_reports_an_impossible_edit_instead_of_declining_it(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "settings.json").write_text(json.dumps({"approve": "edits", "retry": {"maxRetries": 0}}))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(project)
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("edit", {"path": "a.py", "oldText": "y = 1",
                                                                     "newText": "y = 2"}),)))
    scripted_server.enqueue(Reply(text="I will read it first."))
    done = CliRunner().invoke(build_app(), [
        "--model", "openai/scripted", "--api-base", scripted_server.base_url, "--api-key", "k",
        "--context-window", "10000", "--no-session", "-p", "change y"])
    assert done.exit_code == 0, done.output
    assert "declined" not in done.output  # nobody was asked: the edit could not apply
    results = [m for m in scripted_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0]["content"] == "oldText not found in a.py; read the file and copy the text exactly."
