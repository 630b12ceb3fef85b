"""What the user trusts is exactly what applies (issue 30, findings 1, 3 and 10).

A trusted project's risky values were fingerprinted as shown, cut at 117 characters, so a change past the
cut sent the key elsewhere unasked; extensions were trusted by file name, so an edited one ran new code;
a project ``sessionDir`` applied unasked; a project ``models`` entry dropped the user's ``apiBase``; and a
password in an ``apiBase`` was printed in errors and stored in the session.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from agent_harness import make_model_harness
from rich.console import Console
from scripted_server import Reply, ScriptedServer
from typer.testing import CliRunner

from pi_compact.cli.typer_app import build_app
from pi_compact.cli.wiring import build_runtime
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.redact import redact
from pi_compact.options import AppOptions
from pi_compact.settings import ModelOverride, Settings
from pi_compact.settings.files import DEFAULT_SOURCE, LoadedSettings, load_settings
from pi_compact.settings.report import settings_items
from pi_compact.settings.trust import Claim, TrustPolicy, claims
from pi_compact.settings.trust_store import store_path
from pi_compact.ui.status import settings_table
from pi_compact.ui.trust_prompt import ask

MODEL = "openai/scripted"
# 140 characters: the old question showed "http://localhost:11434/aaaa...-..." cut at 117 and trusted only that.
LONG_BASE = "http://localhost:11434/" + "a" * 110 + "/v1/ok"
CHANGED_BASE = LONG_BASE[:-6] + "@evil.invalid/v1"  # the same first 130 characters


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / "agent").mkdir()
    cloned = tmp_path / "cloned"
    (cloned / ".pi").mkdir(parents=True)
    return cloned


def _settings(project: Path, data: dict[str, Any]) -> None:
    (project / ".pi" / "settings.json").write_text(json.dumps(data), encoding="utf-8")


def _asking(asked: list[tuple[Claim, ...]], answer: Any = "trust") -> TrustPolicy:
    return TrustPolicy(ask=lambda _cwd, found: asked.append(found) or answer)


# ---- 1. the whole value is shown and trusted ----------------------------------------------------------


def test_a_long_api_base_is_shown_whole_wrapped_never_cut(tmp_path: Path) -> None:
    claim = Claim(f'models["{MODEL}"].apiBase', json.dumps(LONG_BASE))
    out = io.StringIO()
    assert ask(tmp_path, (claim,), io.StringIO("o\n"), out, width=60) == "once"
    shown = out.getvalue().splitlines()[1:-1]  # between the heading and the question
    assert all(len(line) < 60 for line in shown) and len(shown) > 2
    joined = shown[0][2:] + "".join(line[4:] for line in shown[1:])
    assert joined == f'models["{MODEL}"].apiBase: "{LONG_BASE}"'
    assert "..." not in out.getvalue() and "\u2026" not in out.getvalue()


def test_a_change_past_the_old_cut_after_trusting_is_asked_again(project: Path) -> None:
    _settings(project, {"models": {MODEL: {"apiBase": LONG_BASE}}})
    asked: list[tuple[Claim, ...]] = []
    first = load_settings(project, trust=_asking(asked))
    assert first.settings.model_override(MODEL).api_base == LONG_BASE  # type: ignore[union-attr]
    assert json.dumps(LONG_BASE) in [claim.shown for claim in asked[0]]
    _settings(project, {"models": {MODEL: {"apiBase": CHANGED_BASE}}})
    unasked = load_settings(project)  # print mode: nobody to ask, and the remembered trust must not hold
    assert unasked.settings.model_override(MODEL) is None or \
        unasked.settings.model_override(MODEL).api_base is None  # type: ignore[union-attr]
    assert any("risky settings" in warning for warning in unasked.warnings)
    again = load_settings(project, trust=_asking(asked, "ignore"))
    assert len(asked) == 2 and json.dumps(CHANGED_BASE) in [claim.shown for claim in asked[1]]
    assert again.settings.model_override(MODEL) is None or \
        again.settings.model_override(MODEL).api_base is None  # type: ignore[union-attr]


def test_a_change_past_the_old_cut_is_not_kept_by_a_trust_this_time_reload(project: Path) -> None:
    _settings(project, {"models": {MODEL: {"apiBase": LONG_BASE}}})
    start = load_settings(project, trust=TrustPolicy(ask=lambda _cwd, _found: "once"))
    _settings(project, {"models": {MODEL: {"apiBase": CHANGED_BASE}}})
    reloaded = load_settings(project, trust=TrustPolicy(accepted=start.trusted))
    override = reloaded.settings.model_override(MODEL)
    assert override is None or override.api_base is None


def test_an_answer_stored_by_the_old_format_asks_again_and_does_not_crash(project: Path) -> None:
    _settings(project, {"models": {MODEL: {"apiBase": LONG_BASE}}})
    old_claims = [f'models["{MODEL}"].apiBase=' + (json.dumps(LONG_BASE)[:117] + "...")]
    old = hashlib.sha256("\n".join(sorted(old_claims)).encode()).hexdigest()[:32]
    store_path().write_text(json.dumps({"version": 1, "projects": {
        str(project.resolve()): {"answer": "trust", "claims": old},
        "/elsewhere": {"answer": "ignore", "claims": "x"}}}))
    asked: list[tuple[Claim, ...]] = []
    loaded = load_settings(project, trust=_asking(asked))
    assert len(asked) == 1
    assert loaded.settings.model_override(MODEL).api_base == LONG_BASE  # type: ignore[union-attr]
    stored = json.loads(store_path().read_text())
    assert stored["version"] == 2 and stored["projects"]["/elsewhere"]["answer"] == "ignore"
    assert load_settings(project).settings.model_override(MODEL).api_base == LONG_BASE  # type: ignore[union-attr]


# ---- 3. extensions are trusted by content --------------------------------------------------------------


def _extension(project: Path, name: str, marker: Path, word: str) -> Path:
    folder = project / ".pi" / "extensions"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"open({str(marker)!r}, 'a').write({word!r})\n")
    return path


@pytest.mark.parametrize("change", ["edit", "add"])
def test_an_edited_or_added_extension_is_asked_about_again_and_does_not_run_unasked(
    project: Path, tmp_path: Path, change: str
) -> None:
    marker = tmp_path / "ran"
    _extension(project, "helper.py", marker, "trusted ")
    asked: list[tuple[Claim, ...]] = []
    trusted = load_settings(project, trust=_asking(asked))
    options = AppOptions(cwd=project, no_session=True, model="openai/gpt-4o")
    build_runtime(options, trusted.settings, lambda _event: None)
    assert marker.read_text() == "trusted "
    if change == "edit":
        _extension(project, "helper.py", marker, "EVIL ")
    else:
        _extension(project, "more.py", marker, "EVIL ")
    later = load_settings(project)  # nobody to ask: the remembered trust does not cover the new code
    assert any(".pi/extensions/" in warning for warning in later.warnings)
    build_runtime(options, later.settings, lambda _event: None)
    assert marker.read_text() == "trusted "
    load_settings(project, trust=_asking(asked, "skip"))
    assert len(asked) == 2 and {c.key for c in asked[1]} >= {".pi/extensions/helper.py"}


def test_an_extension_changed_after_the_question_does_not_run(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _extension(project, "helper.py", marker, "trusted ")
    trusted = load_settings(project, trust=TrustPolicy(flag=True))
    _extension(project, "helper.py", marker, "EVIL ")  # after the answer, before (or between) the loads
    _extension(project, "late.py", marker, "EVIL ")
    reports: list[str] = []
    options = AppOptions(cwd=project, no_session=True, model="openai/gpt-4o")
    build_runtime(options, trusted.settings, lambda event: reports.append(getattr(event, "text", "")))
    assert not marker.exists()
    assert any("helper.py changed since you trusted" in text for text in reports)
    assert any("late.py was added since you trusted" in text for text in reports)


def test_the_extension_claim_shows_the_content_hash(project: Path, tmp_path: Path) -> None:
    path = _extension(project, "helper.py", tmp_path / "ran", "x")
    (claim,) = claims({}, project)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert claim.key == ".pi/extensions/helper.py" and claim.digest == digest and digest in claim.shown


# ---- 10. sessionDir, models merge, userinfo --------------------------------------------------------------


def test_a_project_session_dir_is_risky_and_asked_about(project: Path, tmp_path: Path) -> None:
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"sessionDir": "~/my-sessions"}))
    _settings(project, {"sessionDir": "./transcripts", "compaction": {"reserveTokens": 7}})
    asked: list[tuple[Claim, ...]] = []
    loaded = load_settings(project, trust=_asking(asked, "skip"))
    assert [claim.key for claim in asked[0]] == ["sessionDir"]
    assert asked[0][0].shown == '"./transcripts"'
    assert loaded.settings.session_dir == "~/my-sessions" and loaded.settings.compaction.reserve_tokens == 7
    assert load_settings(project, trust=TrustPolicy(flag=True)).settings.session_dir == "./transcripts"


def test_a_project_models_entry_with_safe_fields_keeps_the_users_api_base(
    project: Path, tmp_path: Path, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent" / "settings.json").write_text(json.dumps(
        {"retry": {"maxRetries": 0}, "models": {MODEL: {"apiBase": scripted_server.base_url, "maxTokens": 500}}}))
    _settings(project, {"models": {MODEL: {"contextWindow": 9000}}})
    loaded = load_settings(project, trust=TrustPolicy(ask=lambda _cwd, _found: pytest.fail("nothing risky")))
    override = loaded.settings.model_override(MODEL)
    assert override is not None
    assert (override.api_base, override.context_window, override.max_tokens) == (scripted_server.base_url, 9000, 500)
    monkeypatch.chdir(project)
    scripted_server.enqueue(Reply(text="from the user's own server"))
    done = CliRunner().invoke(build_app(), ["--model", MODEL, "--api-key", "sk-own-key-1", "--no-session", "-p", "hi"])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "from the user's own server"


def test_userinfo_in_urls_is_redacted() -> None:
    text = "Connection error: cannot reach http://bob:hunter2secret@127.0.0.1:9/v1: refused (https://a@b@h/x)"
    assert redact(text, ()) == ("Connection error: cannot reach http://[redacted]@127.0.0.1:9/v1: refused "
                                "(https://[redacted]@h/x)")
    assert redact("http://h:1/v1 and mail me@host", ()) == "http://h:1/v1 and mail me@host"


def test_a_password_in_api_base_is_never_printed_nor_stored_in_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the request fails with a connection error naming the endpoint
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    (agent / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 0}, "models": {
        MODEL: {"apiBase": f"http://bob:hunter2secret@127.0.0.1:{port}/v1", "contextWindow": 8000}}}))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    session = tmp_path / "session.jsonl"
    done = CliRunner().invoke(build_app(), ["--model", MODEL, "--api-key", "sk-own-key-1", "--session",
                                            str(session), "-p", "hi"])
    assert done.exit_code != 0
    assert "cannot reach http://[redacted]@127.0.0.1" in done.stderr
    assert "hunter2secret" not in done.output and "hunter2secret" not in done.stderr
    stored = session.read_text()
    assert "[redacted]@127.0.0.1" in stored and "hunter2secret" not in stored
    assert os.path.getsize(session) > 0


def test_settings_command_does_not_show_a_password_in_api_base(tmp_path: Path) -> None:
    settings = Settings(models=((MODEL, ModelOverride(api_base="http://bob:hunter2secret@proxy:8080/v1")),))
    harness = make_model_harness(tmp_path, settings=settings, info=ModelInfo("local", "local", 16_384, 1_024))
    loaded = LoadedSettings(settings, (), {key: DEFAULT_SOURCE for key, _ in settings_items(settings)})
    console = Console(record=True, width=240)
    console.print(settings_table(loaded, AppOptions(cwd=harness.cwd), harness.session, "local"))
    shown = console.export_text()
    assert "http://[redacted]@proxy:8080/v1" in shown and "hunter2secret" not in shown
