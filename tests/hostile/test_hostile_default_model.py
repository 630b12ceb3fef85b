"""A project's ``defaultModel`` is a risky key, asked once and remembered like ``sessionDir`` (issue 42, item 9).
Pointing it at another of the user's own providers moved the conversation there and ran that provider's key
command, with no note. Through the real CLI: untrusted, the user's own default answers and the other provider's
key command never runs; trusted for the run, the project's choice applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from capped_cli import run_capped
from scripted_server import Reply, ScriptedServer

from pi_compact.settings.files import load_settings
from pi_compact.settings.trust import TrustPolicy


def _models(home_server: ScriptedServer, other_server: ScriptedServer, marker: Path) -> dict[str, object]:
    def provider(server: ScriptedServer, key: str) -> dict[str, object]:
        return {"baseUrl": server.base_url, "api": "openai-completions", "apiKey": key,
                "models": [{"id": "m", "contextWindow": 32000, "maxTokens": 1000}]}

    return {"providers": {"home": provider(home_server, "sk-home"),
                          "work": provider(other_server, f"!touch {marker}; echo sk-work")}}


@pytest.fixture()
def other_server() -> ScriptedServer:
    server = ScriptedServer().start()
    yield server  # type: ignore[misc]
    server.stop()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "cloned"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"defaultModel": "work/m"}), encoding="utf-8")
    return project


@pytest.mark.parametrize("trusted", [False, True])
def test_a_projects_default_model_applies_only_when_the_directory_is_trusted(
    tmp_path: Path, scripted_server: ScriptedServer, other_server: ScriptedServer, trusted: bool
) -> None:
    marker = tmp_path / "work-key-command-ran"
    scripted_server.enqueue(Reply(text="from home"))
    other_server.enqueue(Reply(text="from work"))
    flags = ["--trust-project"] if trusted else []
    done = run_capped(tmp_path, [*flags, "--no-session", "-p", "hi"], cwd=_project(tmp_path),
                      models=_models(scripted_server, other_server, marker), settings={"defaultModel": "home/m"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("from work" if trusted else "from home")
    assert marker.exists() is trusted
    assert (len(scripted_server.requests), len(other_server.requests)) == ((0, 1) if trusted else (1, 0))
    if not trusted:
        assert done.stderr.startswith("warning: Ignoring this project's risky settings (defaultModel)"), done.stderr


def test_the_answer_about_a_default_model_is_asked_once_and_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / "agent").mkdir()
    project = _project(tmp_path)
    asked: list[tuple[str, ...]] = []

    def ask(cwd: Path, claims: tuple[object, ...]) -> str:
        asked.append(tuple(getattr(c, "key", "") for c in claims))
        return "trust"

    first = load_settings(project, trust=TrustPolicy(ask=ask))  # type: ignore[arg-type]
    again = load_settings(project, trust=TrustPolicy(ask=ask))  # type: ignore[arg-type]
    assert asked == [("defaultModel",)]
    assert first.settings.default_model == again.settings.default_model == "work/m"
