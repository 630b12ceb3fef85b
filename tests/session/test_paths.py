"""File locations shared with pi: agent dir, settings paths, session directories and file names."""

from __future__ import annotations

import json
import os
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pi_compact.paths import (
    agent_dir,
    find_most_recent_session,
    global_settings_path,
    history_file,
    new_session_file,
    new_session_id,
    project_settings_path,
    resolve_session_dir,
    session_dir_for_cwd,
    session_dir_name,
    sessions_root,
)


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "home"
    monkeypatch.setenv("HOME", str(directory))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    return directory


def test_agent_dir_defaults_to_home_pi_agent(home: Path) -> None:
    assert agent_dir() == home / ".pi" / "agent"


def test_agent_dir_env_is_used_as_is(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/opt/pi")
    assert agent_dir() == Path("/opt/pi")


def test_agent_dir_env_expands_a_leading_tilde(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/custom/agent")
    assert agent_dir() == home / "custom" / "agent"


def test_agent_dir_env_of_just_tilde_is_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~")
    assert agent_dir() == home


def test_agent_dir_env_does_not_expand_other_tilde_forms(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~other/agent")
    assert agent_dir() == Path("~other/agent")


def test_empty_agent_dir_env_falls_back_to_default(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "")
    assert agent_dir() == home / ".pi" / "agent"


def test_settings_and_sessions_paths_follow_pi_layout(home: Path) -> None:
    assert global_settings_path() == home / ".pi" / "agent" / "settings.json"
    assert project_settings_path("/work/proj") == Path("/work/proj/.pi/settings.json")
    assert sessions_root() == home / ".pi" / "agent" / "sessions"


def test_session_dir_name_for_a_unix_path() -> None:
    assert session_dir_name("/Users/me/proj") == "--Users-me-proj--"


def test_session_dir_name_for_a_windows_path() -> None:
    assert session_dir_name("C:\\x\\y") == "--C--x-y--"


def test_session_dir_name_strips_only_one_leading_separator() -> None:
    assert session_dir_name("//srv/share") == "---srv-share--"


def test_session_dir_for_cwd_sits_under_the_sessions_root(home: Path) -> None:
    assert session_dir_for_cwd("/Users/me/proj") == home / ".pi" / "agent" / "sessions" / "--Users-me-proj--"


def test_session_dir_precedence_is_flag_then_env_then_setting(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_session_dir("/p", setting="~/s") == home / "s"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", "/env")
    assert resolve_session_dir("/p", setting="~/s") == Path("/env")
    assert resolve_session_dir("/p", flag="/flag", setting="~/s") == Path("/flag")


def test_session_dir_defaults_to_the_per_cwd_directory(home: Path) -> None:
    assert resolve_session_dir("/p") == session_dir_for_cwd("/p")


def test_new_session_file_name_is_timestamp_and_uuid(home: Path) -> None:
    now = datetime(2025, 12, 9, 0, 52, 54, 397_000, tzinfo=timezone.utc)
    path = new_session_file("/Users/me/proj", now)
    assert path.parent == session_dir_for_cwd("/Users/me/proj")
    stamp, rest = path.name.split("_", 1)
    assert stamp == "2025-12-09T00-52-54-397Z"
    assert rest.endswith(".jsonl")
    assert uuid.UUID(rest[: -len(".jsonl")]).version == 7


def test_new_session_file_uses_utc_and_the_given_id(tmp_path: Path) -> None:
    now = datetime(2025, 1, 1, 2, 0, 0, 5_000, tzinfo=timezone(timedelta(hours=2)))
    path = new_session_file("/p", now, session_id="abc", directory=tmp_path)
    assert path == tmp_path / "2025-01-01T00-00-00-005Z_abc.jsonl"


def test_session_ids_sort_by_creation_time() -> None:
    early = new_session_id(datetime(2024, 1, 1, tzinfo=timezone.utc))
    late = new_session_id(datetime(2024, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc))
    assert early < late


def test_computing_paths_creates_nothing(home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    new_session_file("/Users/me/proj", datetime.now(timezone.utc))
    global_settings_path()
    project_settings_path(tmp_path / "proj")
    history_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_STATE_HOME is a Linux convention")
def test_history_file_lives_in_the_user_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert history_file() == tmp_path / "state" / "pi-compact" / "history"


def write_session(path: Path, mtime: float, header: object | None = None) -> Path:
    first = json.dumps(header if header is not None else {"type": "session", "id": path.stem, "version": 3})
    path.write_text(first + "\n" + json.dumps({"type": "message"}) + "\n", encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def test_most_recent_session_is_the_newest_by_mtime(tmp_path: Path) -> None:
    write_session(tmp_path / "b.jsonl", 1000)
    newest = write_session(tmp_path / "a.jsonl", 3000)
    write_session(tmp_path / "c.jsonl", 2000)
    assert find_most_recent_session(tmp_path) == newest


def test_most_recent_session_skips_files_without_a_session_header(tmp_path: Path) -> None:
    valid = write_session(tmp_path / "valid.jsonl", 1000)
    write_session(tmp_path / "message-first.jsonl", 5000, {"type": "message", "id": "x"})
    write_session(tmp_path / "numeric-id.jsonl", 5000, {"type": "session", "id": 7})
    (tmp_path / "garbage.jsonl").write_text("not json\n", encoding="utf-8")
    os.utime(tmp_path / "garbage.jsonl", (6000, 6000))
    assert find_most_recent_session(tmp_path) == valid


def test_most_recent_session_ignores_other_extensions(tmp_path: Path) -> None:
    valid = write_session(tmp_path / "valid.jsonl", 1000)
    write_session(tmp_path / "newer.json", 9000)
    write_session(tmp_path / "newer.jsonl.bak", 9000)
    (tmp_path / "dir.jsonl").mkdir()
    assert find_most_recent_session(tmp_path) == valid


def test_most_recent_session_needs_the_header_within_512_bytes(tmp_path: Path) -> None:
    valid = write_session(tmp_path / "valid.jsonl", 1000)
    write_session(tmp_path / "long.jsonl", 9000, {"type": "session", "id": "x", "cwd": "/" + "d" * 600})
    assert find_most_recent_session(tmp_path) == valid


def test_most_recent_session_in_a_missing_directory_is_none(tmp_path: Path) -> None:
    assert find_most_recent_session(tmp_path / "nowhere") is None
    assert not (tmp_path / "nowhere").exists()
