"""Writing the result (issue 3 §4) and ``pi-compact compact SESSION`` (§5).

The entry tests run the compaction pipeline in-process against the scripted server and read the file
back. The command tests start the real CLI as a subprocess (each pays ~5 s for importing litellm, so
there are only four): a full run, nothing to compact, the model-free fallback, and Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from builders import (
    coding_session,
    compaction,
    compaction_settings,
    request_text,
    roles,
    run_compaction,
    structured_summary,
    write_session,
)
from scripted_server import Reply, ScriptedServer, server_error_reply

from pi_compact.agent.compaction.pipeline import BeforeCompactEvent, HookDecision
from pi_compact.agent.events import CompactionEnd, CompactionStart, SessionEvent
from pi_compact.compaction.kept import without_blocks
from pi_compact.compaction.prompts import HISTORY_HEADINGS
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.session.store import SessionStore

SUMMARY = structured_summary("written")
KEPT_IDS = ("test-id-10", "test-id-11")  # what coding_session keeps with keepRecentTokens 400
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def entries_of(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def new_entry(before: bytes, path: Path) -> dict[str, Any]:
    """The single line appended after ``before``, parsed (asserting the rest is untouched)."""
    after = path.read_bytes()
    assert after.startswith(before)
    added = after[len(before) :].splitlines(keepends=True)
    assert len(added) == 1 and added[0].endswith(b"\n")
    entry: dict[str, Any] = json.loads(added[0])
    return entry


def kept_messages(entries: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [e["message"] for e in entries if e["id"] in KEPT_IDS]


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "session.jsonl"
    return path, write_session(path, coding_session())


def compact(path: Path, server: ScriptedServer, reply: Reply | None = None, **options: Any) -> CompactionResult | None:
    server.enqueue(reply or Reply(text=SUMMARY))
    result: CompactionResult | None = run_compaction(path, server.base_url, **options)
    return result


# ---- the appended entry --------------------------------------------------------------------------


def test_compaction_appends_exactly_one_line_and_keeps_earlier_lines_byte_identical(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    compact(path, scripted_server)
    assert lines_of(path)[:-1] == before.splitlines(keepends=True)
    assert len(lines_of(path)) == len(before.splitlines()) + 1


def test_compaction_entry_has_the_fields_pi_reads(scripted_server: ScriptedServer, session: tuple[Path, bytes]) -> None:
    path, before = session
    compact(path, scripted_server)
    entry = new_entry(before, path)
    assert entry["type"] == "compaction"
    assert re.fullmatch(r"[0-9a-f]{8}", entry["id"])
    assert entry["parentId"] == "test-id-11"  # the leaf before compacting
    assert ISO_MS.match(entry["timestamp"])
    assert entry["summary"].startswith(SUMMARY)
    assert (entry["firstKeptEntryId"], entry["tokensBefore"], entry["fromHook"]) == ("test-id-10", 5100, False)
    assert entry["details"]["readFiles"] == ["README.md"]
    assert entry["details"]["modifiedFiles"] == ["src/cli.py", "tests/test_cli.py"]


def test_retained_tail_is_a_copy_of_the_kept_messages(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    compact(path, scripted_server)
    assert new_entry(before, path)["retainedTail"] == kept_messages(entries_of(before))


def test_retain_tail_false_writes_no_retained_tail(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    compact(path, scripted_server, settings=compaction_settings(retain_tail=False))
    entry = new_entry(before, path)
    assert "retainedTail" not in entry
    assert entry["firstKeptEntryId"] == "test-id-10"


def test_summary_ends_with_the_file_lists(scripted_server: ScriptedServer, session: tuple[Path, bytes]) -> None:
    path, before = session
    compact(path, scripted_server)
    summary = new_entry(before, path)["summary"]
    # The model's summary, the user's messages and the edits' outcomes (issue 41), then pi's file lists.
    assert without_blocks(summary) == SUMMARY
    assert summary.startswith(SUMMARY + "\n\n<user-messages>\n")
    assert summary.endswith("\n\n<read-files>\nREADME.md\n</read-files>\n\n"
                            "<modified-files>\nsrc/cli.py\ntests/test_cli.py\n</modified-files>")


@pytest.mark.parametrize("retain_tail", [True, False])
def test_reopened_session_context_is_summary_then_kept_messages(
    scripted_server: ScriptedServer, session: tuple[Path, bytes], retain_tail: bool
) -> None:
    path, before = session
    result = compact(path, scripted_server, settings=compaction_settings(retain_tail=retain_tail))
    assert result is not None
    context = SessionStore.open(path, str(path.parent), 0).context()
    assert roles(context.messages) == ["compactionSummary", "user", "assistant"]
    assert context.messages[0]["summary"] == result.summary
    assert list(context.messages[1:]) == kept_messages(entries_of(before))


def test_session_ending_in_a_compaction_is_not_compacted_again(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "done.jsonl"
    before = write_session(path, [*coding_session(), {**compaction(SUMMARY, "test-id-10"), "id": "c1",
                                                      "parentId": "test-id-11"}])
    events: list[SessionEvent] = []
    assert compact(path, scripted_server, events=events) is None
    end = events[-1]
    assert isinstance(end, CompactionEnd) and end.result is None and not end.aborted
    assert end.error_message is not None and "already compacted" in end.error_message.lower()
    assert scripted_server.requests == []
    assert path.read_bytes() == before


class _ReplaceFileWithDirectory:
    """A hook that makes the append fail: the session file turns into a directory mid-compaction."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def before_compact(self, event: BeforeCompactEvent) -> HookDecision | None:
        self.path.unlink()
        self.path.mkdir()
        return None

    def after_compact(self, entry: dict[str, Any], from_extension: bool) -> None:
        raise AssertionError("nothing was written, so nothing may be reported as compacted")


def test_failed_write_still_ends_the_compaction_with_an_error(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, _ = session
    events: list[SessionEvent] = []
    result = compact(path, scripted_server, events=events, hooks=_ReplaceFileWithDirectory(path))
    assert result is None
    assert [type(e) for e in events] == [CompactionStart, CompactionEnd]
    end = events[-1]
    assert isinstance(end, CompactionEnd) and end.result is None and not end.aborted
    assert end.error_message is not None
    # The file was replaced behind the store's back: it refuses to write rather than fail half-way.
    assert end.error_message.startswith(f"Compaction failed: {path} was changed by another program ")


# ---- the command (subprocess) --------------------------------------------------------------------


def cli_env(tmp_path: Path, settings: Mapping[str, Any] | None = None) -> dict[str, str]:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    if settings is not None:
        (agent / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PI_CODING_AGENT"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent), "COLUMNS": "200", "NO_COLOR": "1",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"})
    return env


def cli_args(path: Path, server: ScriptedServer, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pi_compact", "compact", str(path), "--model", "openai/scripted",
        "--api-base", server.base_url, "--api-key", "x", "--context-window", "128000",
        "--keep-recent-tokens", "400", *extra,
    ]


def run_cli(
    path: Path, server: ScriptedServer, *extra: str, settings: Mapping[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_args(path, server, *extra), cwd=path.parent, env=cli_env(path.parent, settings),
        capture_output=True, text=True, timeout=120,
    )


def test_compact_command_summarizes_with_its_flags_and_appends_one_entry(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    scripted_server.enqueue(Reply(text=SUMMARY))
    # (A reserve whose 80 % is under the gain's cap: this small history may take no more than 512 tokens.)
    done = run_cli(path, scripted_server, "--reserve-tokens", "600", "--instructions", "the flag parsing")
    assert done.returncode == 0, done.stderr
    (request,) = scripted_server.requests
    assert request["max_tokens"] == 480
    assert request_text(request, "user").endswith("\n\nAdditional focus: the flag parsing")
    entry = new_entry(before, path)
    assert (entry["type"], entry["firstKeptEntryId"], entry["details"]["source"]) == (
        "compaction", "test-id-10", "model")
    out = " ".join(done.stdout.split())
    assert "Context 5,100 → ~" in out
    assert "Kept from entry test-id-10; read: README.md; modified: src/cli.py, tests/test_cli.py" in out
    assert "Summary by the model" in out


def test_compact_command_with_nothing_to_compact_says_so_and_writes_nothing(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "tiny.jsonl"
    before = write_session(path, coding_session()[:2])
    done = run_cli(path, scripted_server)
    assert done.returncode == 0, done.stderr
    assert "Nothing to compact" in done.stdout
    assert scripted_server.requests == []
    assert path.read_bytes() == before


def test_compact_command_falls_back_to_a_model_free_summary_when_the_server_fails(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    scripted_server.enqueue(server_error_reply(500, repeat=True))
    done = run_cli(path, scripted_server, settings={"retry": {"maxRetries": 1, "baseDelayMs": 1}})
    assert done.returncode == 3, done.stderr  # written, but not by the model: a distinct non-zero code
    assert "built without it (exit code 3)" in " ".join(done.stderr.split())
    assert len(scripted_server.requests) == 2  # one try plus the one retry the settings file allows
    entry = new_entry(before, path)
    assert entry["details"]["fallback"] is True
    assert "500" in entry["details"]["error"]
    assert all(f"\n{heading}\n" in f"\n{entry['summary']}" for heading in HISTORY_HEADINGS)
    assert entry["summary"].endswith("<modified-files>\nsrc/cli.py\ntests/test_cli.py\n</modified-files>")
    assert "Summary built without a model" in " ".join(done.stdout.split())


def test_ctrl_c_during_the_summary_request_exits_130_and_writes_nothing(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    scripted_server.enqueue(Reply(text=SUMMARY, delay_s=30))
    process = subprocess.Popen(
        cli_args(path, scripted_server), cwd=path.parent, env=cli_env(path.parent),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not scripted_server.requests and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert scripted_server.requests, "the command never sent its summary request"
        sent_at = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert time.monotonic() - sent_at < 10
    assert "cancelled" in (out + err).lower()
    assert path.read_bytes() == before


def test_dry_run_fits_a_reserve_not_below_the_window_and_names_the_settings_file(
    session: tuple[Path, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_compact.cli.compact import compact_command

    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    settings = {"compaction": {"reserveTokens": 20000, "keepRecentTokens": 400}}
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(tmp_path)
    path, before = session
    assert compact_command(path, dry_run=True, context_window=10_000) == 0
    out, err = capsys.readouterr()
    assert err == (
        f"warning: compaction.reserveTokens (20000) in {agent_dir / 'settings.json'} is not smaller than the "
        "10000-token context window, so auto-compaction would run before every turn; using 2500 instead.\n"
    )
    assert "threshold 7,500 tokens" in out and "threshold -" not in out
    assert path.read_bytes() == before


def test_compact_fits_a_keep_that_cannot_fit_the_window_and_compacts(
    scripted_server: ScriptedServer, session: tuple[Path, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pi_compact.cli.compact import compact_command

    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    settings = {"compaction": {"reserveTokens": 400, "keepRecentTokens": 50000}, "retry": {"maxRetries": 0}}
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.chdir(tmp_path)
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    path, before = session
    code = compact_command(path, context_window=1_200, model="openai/scripted", api_base=scripted_server.base_url,
                    api_key="test")
    # A 1,200-token window is too small for the summarizer too: the model-free summary is written (exit 3).
    assert code == 3
    err = capsys.readouterr().err
    assert err.startswith(
        f"warning: compaction.keepRecentTokens (50000) in {agent_dir / 'settings.json'} is not smaller than the "
        "800 tokens left by the 1200-token context window minus compaction.reserveTokens (400), so compaction "
        "could not bring the context under its threshold; using 400 instead.\n"
    )
    assert err.count("warning:") == 1
    entry = new_entry(before, path)  # with the keep as set, everything would have been "kept": nothing to do
    assert (entry["type"], entry["firstKeptEntryId"]) == ("compaction", KEPT_IDS[0])


def test_compact_command_plans_the_compaction_once(
    scripted_server: ScriptedServer, session: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_compact.agent.compaction import offline
    from pi_compact.agent.compaction import pipeline as compactor
    from pi_compact.cli.choices import CompactOptions
    from pi_compact.cli.compact import run_compact

    path, before = session
    plans: list[int] = []
    real = offline.prepare_compaction

    def counted(*args: Any, **kwargs: Any) -> Any:
        plans.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(offline, "prepare_compaction", counted)
    monkeypatch.setattr(compactor, "prepare_compaction", counted)
    scripted_server.enqueue(Reply(text=SUMMARY))
    options = CompactOptions(path, model="openai/scripted", api_base=scripted_server.base_url, api_key="test",
                             context_window=128000)
    assert run_compact(options, compaction_settings()) == 0
    assert new_entry(before, path)["firstKeptEntryId"] == "test-id-10"
    assert len(plans) == 1


def test_dry_run_with_no_model_and_no_key_plans_for_the_embedded_model_as_the_terminal_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pi_compact.cli.compact import compact_command

    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.jsonl"
    write_session(path, coding_session())
    assert compact_command(session=path, dry_run=True) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Context 5,100 / 16,384 tokens" in out and "threshold 12,288 tokens" in out
