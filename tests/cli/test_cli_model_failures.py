"""What the command line does when the model fails: exit codes, --no-fallback, retries shown, empty answers.

In-process through the real typer parser (``CliRunner``) against the scripted server, settings and
sessions under ``tmp_path``; the fast path's parsing of the new flag is checked separately.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import coding_session, write_session
from scripted_server import Reply, ScriptedServer, server_error_reply
from typer.testing import CliRunner, Result

from pi_compact.cli.argv import fast_compact_args
from pi_compact.cli.typer_app import build_app

FAST_RETRY = {"retry": {"maxRetries": 1, "baseDelayMs": 1}}


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
            settings: dict[str, Any] | None = None) -> Result:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir(exist_ok=True)
    (agent_dir / "settings.json").write_text(json.dumps(settings or FAST_RETRY), encoding="utf-8")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(build_app(), args)


def _compact(server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             *extra: str) -> tuple[Result, Path, bytes]:
    path = tmp_path / "session.jsonl"
    before = write_session(path, coding_session())
    done = _invoke(tmp_path, monkeypatch, [
        "compact", str(path), "--model", "openai/scripted", "--api-base", server.base_url, "--api-key", "x",
        "--context-window", "128000", "--keep-recent-tokens", "400", *extra,
    ])
    return done, path, before


def test_compact_exits_3_and_says_so_when_the_summary_was_built_without_the_model(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(server_error_reply(500, repeat=True))
    done, path, before = _compact(scripted_server, tmp_path, monkeypatch)
    assert done.exit_code == 3, done.output
    assert "The model failed, so the summary was built without it (exit code 3)." in " ".join(done.stderr.split())
    entry = json.loads(path.read_bytes()[len(before):])
    assert entry["type"] == "compaction" and entry["details"]["fallback"] is True


def test_no_fallback_refuses_the_model_free_summary_and_writes_nothing(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(server_error_reply(500, repeat=True))
    done, path, before = _compact(scripted_server, tmp_path, monkeypatch, "--no-fallback")
    assert done.exit_code == 1, done.output
    assert path.read_bytes() == before
    assert "Compaction failed: 500 The server had an error" in done.stdout
    assert "--no-fallback: no model-free summary was written; the file was not changed." in done.stderr


def test_no_fallback_still_compacts_when_the_model_answers(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders import structured_summary

    scripted_server.enqueue(Reply(text=structured_summary("ok")))
    done, path, before = _compact(scripted_server, tmp_path, monkeypatch, "--no-fallback")
    assert done.exit_code == 0, done.output
    assert json.loads(path.read_bytes()[len(before):])["details"]["source"] == "model"


def test_compact_reports_each_retry_on_stderr(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(server_error_reply(503, repeat=True))
    done, _, _ = _compact(scripted_server, tmp_path, monkeypatch)
    stderr = " ".join(done.stderr.split())  # rich wraps long lines
    assert stderr.count("Retrying (") == 1
    assert "Retrying (1/1) in 0.001 s after: 503 The server had an error while processing your request (503)" in stderr


def test_fast_path_accepts_no_fallback() -> None:
    assert fast_compact_args(["compact", "s.jsonl", "--no-fallback"]) == {
        "session": Path("s.jsonl"), "no_fallback": True,
    }


def test_print_mode_fails_on_an_unreadable_200_answer(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(Reply(garbage_body="<html>maintenance</html>", repeat=True))
    done = _invoke(tmp_path, monkeypatch, [
        "--model", "openai/scripted", "--api-base", scripted_server.base_url, "--api-key", "x",
        "--context-window", "10000", "-p", "Hello?",
    ])
    assert done.exit_code == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"pi-compact: Empty reply from {scripted_server.base_url}: no text and no tool call (the answer was "
        "empty or not an OpenAI-compatible stream).\n"
    )


def test_compact_says_the_model_answered_when_its_summary_was_not_usable(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.enqueue(Reply(text="I looked at the session; it is about a CLI.", repeat=True))
    done, path, before = _compact(scripted_server, tmp_path, monkeypatch)
    assert done.exit_code == 3, done.output
    said = " ".join(done.stderr.split())
    assert "The model answered, but its summary could not be used" in said
    assert "The model failed" not in said
    block = " ".join(done.stdout.split())
    assert "Summary built without a model" in block
    assert "The model's unused answers · " in block and "failed summary requests" not in block


def test_compact_on_a_small_session_asks_once_and_says_nothing_was_gained(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 25 §6: the summary of a few short messages is not smaller than they are. That is no fault of
    # the model (no retry, no model-free summary in its place, no "failed"): nothing is written, exit 0.
    from builders import assistant, chain, sized, structured_summary, user

    path = tmp_path / "small.jsonl"
    before = write_session(path, chain(
        user("Fix the typo in README.md. Never push to main."), assistant("Fixed the typo."),
        user("Thanks. What next? " + sized(100)), assistant("Add docs. " + sized(50)),
    ))
    scripted_server.enqueue(Reply(text=structured_summary("small"), repeat=True))
    done = _invoke(tmp_path, monkeypatch, [
        "compact", str(path), "--model", "openai/scripted", "--api-base", scripted_server.base_url,
        "--api-key", "x", "--context-window", "16384", "--keep-recent-tokens", "100",
    ])
    assert done.exit_code == 0, done.output
    assert len(scripted_server.requests) == 1
    said = " ".join(done.output.split())
    assert "Nothing gained: the summary and the kept messages" in said
    assert "failed" not in said.lower()
    assert path.read_bytes() == before
