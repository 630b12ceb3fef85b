"""Which session file print mode uses: a new one by default, --session FILE, -c, --no-session.

In-process ``run_print_mode`` (the CLI's code path below argument parsing) with the model resolved
from options exactly as the CLI resolves it, talking to the scripted server.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from agent_harness import make_harness
from scripted_server import Reply, ScriptedServer

from pi_compact.cli.wiring import run_print_mode
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.protocol import ModelInfo
from pi_compact.options import AppOptions
from pi_compact.paths import session_dir_name
from pi_compact.settings import RetrySettings, Settings

SETTINGS = Settings(retry=RetrySettings(enabled=False))
NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_([0-9a-f-]{36})\.jsonl$")


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    return tmp_path / "agent"


def _options(server: ScriptedServer, cwd: Path, prompt: str, **kwargs: object) -> AppOptions:
    cwd.mkdir(parents=True, exist_ok=True)
    return AppOptions(cwd=cwd, prompt=prompt, model="openai/scripted", api_base=server.base_url, api_key="test",
                      context_window=100_000, **kwargs)  # type: ignore[arg-type]


def _run(server: ScriptedServer, cwd: Path, prompt: str, answer: str, **kwargs: object) -> int:
    server.enqueue(Reply(text=answer))
    return run_print_mode(_options(server, cwd, prompt, **kwargs), SETTINGS)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_print_mode_prints_the_final_answer(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(scripted_server, tmp_path / "proj", "Say hi.", "Hi there!") == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("Hi there!\n", "")


def test_default_session_is_a_new_file_named_by_its_header_id(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    cwd = tmp_path / "my proj"
    _run(scripted_server, cwd, "Say hi.", "Hi.")
    folder = agent_dir / "sessions" / session_dir_name(cwd)
    [path] = list(folder.iterdir())
    match = NAME.match(path.name)
    assert match is not None
    header = _lines(path)[0]
    assert (header["type"], header["id"], header["cwd"]) == ("session", match.group(1), str(cwd))
    assert [e["type"] for e in _lines(path)] == [
        "session", "model_change", "thinking_level_change", "message", "message"
    ]


def test_new_session_opens_with_the_model_and_thinking_level_as_pi_does(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    path = tmp_path / "talk.jsonl"
    _run(scripted_server, tmp_path / "proj", "Say hi.", "Hi.", session=path)
    _, model, thinking, question, _ = _lines(path)
    # pi 0.73.1 writes these two entries first, each chained to the one before.
    fields = {"id", "parentId", "timestamp"}
    assert {k: v for k, v in model.items() if k not in fields} == {
        "type": "model_change", "provider": "openai", "modelId": "scripted"
    }
    assert {k: v for k, v in thinking.items() if k not in fields} == {
        "type": "thinking_level_change", "thinkingLevel": "off"
    }
    assert (model["parentId"], thinking["parentId"], question["parentId"]) == (None, model["id"], thinking["id"])


def test_resumed_session_gets_no_second_opening(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    path = tmp_path / "talk.jsonl"
    _run(scripted_server, tmp_path / "proj", "FIRST-QUESTION", "one", session=path)
    _run(scripted_server, tmp_path / "proj", "SECOND-QUESTION", "two", session=path)
    kinds = [e["type"] for e in _lines(path)]
    assert (kinds.count("model_change"), kinds.count("thinking_level_change")) == (1, 1)


def test_switch_before_the_first_prompt_follows_the_opening_entries(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    other = LiteLLMModel(ModelInfo("openai/other", "openai", 100_000, None), api_base=scripted_server.base_url,
                         api_key="test")
    h.session.set_model(other)
    scripted_server.enqueue(Reply(text="Hi."))
    h.session.prompt("Say hi.")
    # As pi: the model the session started with and its thinking level, then the switch.
    assert [(e["type"], e.get("modelId")) for e in h.entries()[1:4]] == [
        ("model_change", "scripted"), ("thinking_level_change", None), ("model_change", "other")
    ]
    assert h.entries()[-1]["message"]["model"] == "other"


def test_session_flag_new_file_gets_a_uuid_v7_header_id(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    path = tmp_path / "talk.jsonl"
    _run(scripted_server, tmp_path / "proj", "Say hi.", "Hi.", session=path)
    # pi makes every session id a UUIDv7, whether or not --session names the file.
    assert uuid.UUID(str(_lines(path)[0]["id"])).version == 7


def test_each_run_without_continue_starts_a_new_session(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    cwd = tmp_path / "proj"
    _run(scripted_server, cwd, "FIRST-QUESTION", "one")
    _run(scripted_server, cwd, "SECOND-QUESTION", "two")
    assert len(list((agent_dir / "sessions" / session_dir_name(cwd)).iterdir())) == 2
    assert "FIRST-QUESTION" not in json.dumps(scripted_server.requests[-1]["messages"])


def test_continue_appends_to_the_most_recent_session(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    cwd = tmp_path / "proj"
    _run(scripted_server, cwd, "OLD-QUESTION", "OLD-ANSWER")
    _run(scripted_server, cwd, "RECENT-QUESTION", "RECENT-ANSWER")
    folder = agent_dir / "sessions" / session_dir_name(cwd)
    [old] = [p for p in folder.iterdir() if "OLD-QUESTION" in p.read_text(encoding="utf-8")]
    os.utime(old, (1_600_000_000, 1_600_000_000))  # unmistakably older, whatever the clock resolution
    _run(scripted_server, cwd, "NEXT-QUESTION", "next", continue_recent=True)
    assert len(list(folder.iterdir())) == 2
    [recent] = [p for p in folder.iterdir() if p != old]
    assert len(_lines(recent)) == 7 and len(_lines(old)) == 5
    sent = json.dumps(scripted_server.requests[-1]["messages"])
    assert "RECENT-QUESTION" in sent and "RECENT-ANSWER" in sent and "NEXT-QUESTION" in sent
    assert "OLD-QUESTION" not in sent


def test_continue_without_a_previous_session_starts_one(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    cwd = tmp_path / "proj"
    assert _run(scripted_server, cwd, "Q", "A", continue_recent=True) == 0
    assert len(list((agent_dir / "sessions" / session_dir_name(cwd)).iterdir())) == 1


def test_session_flag_creates_then_reopens_that_file(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    cwd = tmp_path / "proj"
    path = tmp_path / "chosen dir" / "talk.jsonl"
    _run(scripted_server, cwd, "FIRST-QUESTION", "FIRST-ANSWER", session=path)
    _run(scripted_server, cwd, "SECOND-QUESTION", "two", session=path)
    assert [e["type"] for e in _lines(path)] == [
        "session", "model_change", "thinking_level_change", "message", "message", "message", "message"
    ]
    assert "FIRST-ANSWER" in json.dumps(scripted_server.requests[-1]["messages"])
    assert not (agent_dir / "sessions").exists()


def test_no_session_writes_no_file(scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path) -> None:
    cwd = tmp_path / "proj"
    assert _run(scripted_server, cwd, "Q", "A", no_session=True) == 0
    assert not (agent_dir / "sessions").exists()
    assert list(cwd.iterdir()) == []


def test_provider_failure_exits_non_zero_with_one_line(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted_server.enqueue(Reply(status=401, error_body={"error": {"message": "Invalid API key provided"}}))
    code = run_print_mode(_options(scripted_server, tmp_path / "proj", "Q"), SETTINGS)
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err == "pi-compact: 401 Invalid API key provided\n"


def test_agents_md_of_the_project_is_in_the_system_prompt(
    scripted_server: ScriptedServer, tmp_path: Path, agent_dir: Path
) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    (cwd / "AGENTS.md").write_text("Always run `make check` before you finish.\n", encoding="utf-8")
    _run(scripted_server, cwd, "Q", "A", no_session=True)
    system = scripted_server.requests[-1]["messages"][0]
    assert system["role"] == "system"
    assert "Always run `make check` before you finish." in system["content"]
    assert f"Working directory: {cwd}" in system["content"]
