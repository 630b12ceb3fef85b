"""Extension hooks around compaction: real ``.py`` files loaded the way ``--extension FILE`` loads them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from textwrap import dedent

import pytest
from agent_harness import (
    INFO,
    OVER_THRESHOLD,
    SETTINGS,
    SUMMARY,
    UNDER_THRESHOLD,
    assert_compactions_paired,
    padded,
    summary_reply,
)
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.events import Notice, SessionEvent
from pi_compact.cancel import CancelToken
from pi_compact.cli.wiring import Runtime, build_runtime
from pi_compact.compaction.kept import without_blocks
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.options import AppOptions
from pi_compact.settings.files import load_settings
from pi_compact.settings.trust import TrustPolicy

CANCEL = """
def session_before_compact(event):
    return {"cancel": True}
"""

CUSTOM = """
import json, pathlib

def session_before_compact(event):
    return {"compaction": {"summary": "CUSTOM SUMMARY from " + event.reason, "tokensBefore": 999,
                           "details": {"by": "extension"}}}

def session_compact(event):
    entry = event["compactionEntry"]
    record = {"id": entry["id"], "summary": entry["summary"], "fromExtension": event["fromExtension"]}
    pathlib.Path(__file__).with_suffix(".seen").write_text(json.dumps(record))
"""

RAISES = """
def session_before_compact(event):
    raise RuntimeError("extension bug")
"""


@pytest.fixture(autouse=True)
def _isolated_agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the extension under test may load: no user-wide extensions from ~/.pi/agent/extensions.
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))


def _runtime(server: ScriptedServer, tmp_path: Path, source: str, events: list[SessionEvent]) -> Runtime:
    extension = tmp_path / "my extension.py"
    extension.write_text(dedent(source), encoding="utf-8")
    cwd = tmp_path / "project"
    cwd.mkdir()
    options = AppOptions(cwd=cwd, session=tmp_path / "session.jsonl", extensions=(extension,))
    model = LiteLLMModel(INFO, api_base=server.base_url, api_key="test", retry=SETTINGS.retry)
    return build_runtime(options, SETTINGS, events.append, model)


def _history(server: ScriptedServer, runtime: Runtime) -> None:
    server.enqueue(*(Reply(text=padded(f"ANSWER-{i}"), prompt_tokens=UNDER_THRESHOLD) for i in range(3)))
    for i in range(3):
        runtime.session.prompt(padded(f"QUESTION-{i}"))


def _entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_extension_cancel_stops_a_threshold_compaction(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    events: list[SessionEvent] = []
    runtime = _runtime(scripted_server, tmp_path, CANCEL, events)
    _history(scripted_server, runtime)
    scripted_server.enqueue(Reply(text=padded("BIG-ANSWER"), prompt_tokens=OVER_THRESHOLD))
    runtime.session.prompt(padded("QUESTION-3"))
    pairs = assert_compactions_paired(events)
    assert [(s.reason, e.result, e.aborted, e.will_retry) for s, e in pairs] == [("threshold", None, True, False)]
    assert not any(e["type"] == "compaction" for e in _entries(runtime.store.path or Path()))
    assert len(scripted_server.requests) == 4  # no summarizer call


def test_extension_cancel_of_manual_compaction_writes_nothing(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    events: list[SessionEvent] = []
    runtime = _runtime(scripted_server, tmp_path, CANCEL, events)
    _history(scripted_server, runtime)
    path = runtime.store.path
    assert path is not None
    before = path.read_bytes()
    assert runtime.session.compact("anything") is None
    assert path.read_bytes() == before
    assert [(s.reason, e.aborted) for s, e in assert_compactions_paired(events)] == [("manual", True)]


def test_extension_custom_summary_is_stored_from_hook(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    events: list[SessionEvent] = []
    runtime = _runtime(scripted_server, tmp_path, CUSTOM, events)
    _history(scripted_server, runtime)
    result = runtime.session.compact()
    assert result is not None and result.summary == "CUSTOM SUMMARY from manual"
    assert len(scripted_server.requests) == 3  # the hook's summary replaced the summarizer call
    entry = [e for e in _entries(runtime.store.path or Path()) if e["type"] == "compaction"][0]
    assert (entry["summary"], entry["fromHook"], entry["tokensBefore"]) == ("CUSTOM SUMMARY from manual", True, 999)
    assert isinstance(entry["details"], dict) and entry["details"]["by"] == "extension"
    pairs = assert_compactions_paired(events)
    assert pairs[0][1].result is not None and pairs[0][1].result["summary"] == "CUSTOM SUMMARY from manual"


def test_session_compact_hook_sees_the_saved_entry(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    events: list[SessionEvent] = []
    runtime = _runtime(scripted_server, tmp_path, CUSTOM, events)
    _history(scripted_server, runtime)
    runtime.session.compact()
    seen = json.loads((tmp_path / "my extension.seen").read_text())
    saved = [e for e in _entries(runtime.store.path or Path()) if e["type"] == "compaction"][0]
    assert seen == {"id": saved["id"], "summary": "CUSTOM SUMMARY from manual", "fromExtension": True}
    assert len(assert_compactions_paired(events)) == 1


def test_raising_extension_is_reported_and_default_compaction_runs(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    events: list[SessionEvent] = []
    runtime = _runtime(scripted_server, tmp_path, RAISES, events)
    _history(scripted_server, runtime)
    scripted_server.enqueue(summary_reply())
    result = runtime.session.compact(cancel=CancelToken())
    # The model's summary (then the blocks of what the code keeps, issue 41).
    assert result is not None and without_blocks(result.summary) == SUMMARY
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1
    assert "my extension.py" in notices[0].text and "RuntimeError: extension bug" in notices[0].text
    entry = [e for e in _entries(runtime.store.path or Path()) if e["type"] == "compaction"][0]
    assert (entry["summary"], entry["fromHook"]) == (result.summary, False)
    assert [(s.reason, e.result is not None) for s, e in assert_compactions_paired(events)] == [("manual", True)]


def _summary_extension(folder: Path, name: str, summary: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(
        f"def session_before_compact(event):\n    return {{'compaction': {{'summary': {summary!r}}}}}\n",
        encoding="utf-8",
    )
    return path


def test_extensions_load_global_then_project_then_flag_and_the_last_answer_wins(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    cwd = tmp_path / "project"
    _summary_extension(tmp_path / "agent" / "extensions", "global", "FROM GLOBAL")
    _summary_extension(cwd / ".pi" / "extensions", "project", "FROM PROJECT")
    events: list[SessionEvent] = []
    model = LiteLLMModel(INFO, api_base=scripted_server.base_url, api_key="test", retry=SETTINGS.retry)
    options = AppOptions(cwd=cwd, session=tmp_path / "session.jsonl")
    # A project's extension loads only as trusted (its content hash, settings.trust): trusted here.
    settings = replace(SETTINGS, project_extensions=load_settings(cwd, trust=TrustPolicy(flag=True)).settings
                       .project_extensions)
    runtime = build_runtime(options, settings, events.append, model)
    _history(scripted_server, runtime)
    result = runtime.session.compact()
    assert result is not None and result.summary == "FROM PROJECT"
    flagged = _summary_extension(tmp_path / "elsewhere", "flag", "FROM FLAG")
    options = AppOptions(cwd=cwd, session=tmp_path / "second.jsonl", extensions=(flagged,))
    runtime = build_runtime(options, settings, events.append, model)
    _history(scripted_server, runtime)
    result = runtime.session.compact()
    assert result is not None and result.summary == "FROM FLAG"
