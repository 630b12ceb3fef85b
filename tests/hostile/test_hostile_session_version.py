"""Hostile session headers (issue 30.8): the version is read as pi reads it, so a header pi treats as version 3
(``3.0``, ``"3"``) keeps its ids, branches and kept tail and is never rewritten; a file that does need
migrating is copied beside itself before its one rewrite, and never over an earlier copy."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, compaction, header, msg, user, write_session
from scripted_server import Reply, ScriptedServer
from typer.testing import CliRunner

from pi_compact.cli.typer_app import build_app
from pi_compact.session.store import SessionStore


def _branched(version: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A session with a compaction keeping a tail, and an abandoned branch after it."""
    head = header(None)
    head["version"] = version
    entries = [
        msg(user("old question"), id="a1", parent=None),
        msg(assistant("old answer"), id="a2", parent="a1"),
        msg(user("kept question"), id="a3", parent="a2"),
        msg(assistant("kept answer"), id="a4", parent="a3"),
        compaction("SUMMARY OF THE START", "a3", id="c1", parent="a4"),
        msg(user("abandoned question"), id="b1", parent="c1"),
        msg(assistant("abandoned answer"), id="b2", parent="b1"),
        msg(user("latest question"), id="a5", parent="c1"),
        msg(assistant("latest answer"), id="a6", parent="a5"),
    ]
    return head, entries


@pytest.mark.parametrize("version", [3.0, "3", " 3 ", 4], ids=["3.0", "string-3", "spaced-3", "newer-4"])
def test_a_header_pi_reads_as_current_keeps_ids_branches_and_kept_tail(tmp_path: Path, version: Any) -> None:
    path = tmp_path / "s.jsonl"
    head, entries = _branched(version)
    original = write_session(path, entries, head)
    store = SessionStore.open(path, str(tmp_path), 1_700_000_000_000)
    assert not store.warnings
    assert [e["id"] for e in store.entries] == ["a1", "a2", "a3", "a4", "c1", "b1", "b2", "a5", "a6"]
    assert [e["id"] for e in store.branch()] == ["a1", "a2", "a3", "a4", "c1", "a5", "a6"]
    assert [e["id"] for e in store.branch_tail()] == ["a3", "a4", "c1", "a5", "a6"]
    store.append_message(user("one more"), 1_700_000_000_001)
    after = path.read_bytes()
    assert after.startswith(original)  # appended to, never rewritten
    assert json.loads(after.splitlines()[-1])["parentId"] == "a6"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".bak")) == []


def test_print_mode_on_a_version_3_0_header_sends_the_kept_tail_and_leaves_the_file_as_it_was(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.jsonl"
    head, entries = _branched(3.0)
    head["cwd"] = str(tmp_path)
    original = write_session(path, entries, head)
    scripted_server.enqueue(Reply(text="next answer"))
    done = CliRunner().invoke(build_app(), ["--model", "openai/scripted", "--api-base", scripted_server.base_url,
                                            "--api-key", "k", "--context-window", "10000", "--session", str(path),
                                            "-p", "go on"])
    assert done.exit_code == 0, done.output
    assert done.stdout == "next answer\n"
    sent = json.dumps(scripted_server.requests[-1]["messages"])
    assert "SUMMARY OF THE START" in sent and "kept question" in sent and "latest answer" in sent
    assert "abandoned" not in sent and "old question" not in sent
    assert path.read_bytes().startswith(original)


def _v1_file(path: Path) -> bytes:
    entries = [
        {"type": "message", "timestamp": "2025-01-01T00:00:00.000Z", "message": user("legacy question")},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": assistant("legacy answer")},
    ]
    return write_session(path, entries, header(None))


def test_a_v1_file_is_copied_beside_itself_before_its_first_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    original = _v1_file(path)
    store = SessionStore.open(path, str(tmp_path), 1_700_000_000_000)
    backup = tmp_path / "s.jsonl.v1.bak"
    assert store.warnings == (
        f"{path} is a version 1 pi session: it is read as version 3 and rewritten so at the first save, "
        f"which first copies the original to {backup}.",
    )
    assert path.read_bytes() == original and not backup.exists()  # opening alone writes nothing
    store.append_message(user("more"), 1_700_000_000_001)
    assert backup.read_bytes() == original
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert json.loads(path.read_bytes().splitlines()[0])["version"] == 3


def test_a_v2_file_is_backed_up_under_its_own_version(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    original = write_session(path, [msg(user("q"), id="x1", parent=None), msg(assistant("a"), id="x2",
                                                                                 parent="x1")], header(2))
    SessionStore.open(path, str(tmp_path), 1_700_000_000_000).append_message(user("more"), 1_700_000_000_001)
    assert (tmp_path / "s.jsonl.v2.bak").read_bytes() == original


def test_an_earlier_backup_is_never_written_over(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    original = _v1_file(path)
    (tmp_path / "s.jsonl.v1.bak").write_text("the user's own copy", encoding="utf-8")
    store = SessionStore.open(path, str(tmp_path), 1_700_000_000_000)
    assert str(tmp_path / "s.jsonl.v1.2.bak") in store.warnings[0]
    store.append_message(user("more"), 1_700_000_000_001)
    assert (tmp_path / "s.jsonl.v1.bak").read_text(encoding="utf-8") == "the user's own copy"
    assert (tmp_path / "s.jsonl.v1.2.bak").read_bytes() == original


def test_print_mode_says_in_one_line_where_the_original_of_a_migrated_file_is_kept(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.jsonl"
    original = _v1_file(path)
    scripted_server.enqueue(Reply(text="answer"))
    done = CliRunner().invoke(build_app(), ["--model", "openai/scripted", "--api-base", scripted_server.base_url,
                                            "--api-key", "k", "--context-window", "10000", "--session", str(path),
                                            "-p", "go on"])
    assert done.exit_code == 0, done.output
    notes = [line for line in done.stderr.splitlines() if ".v1.bak" in line]
    assert notes == [f"warning: {path} is a version 1 pi session: it is read as version 3 and rewritten so at "
                     f"the first save, which first copies the original to {tmp_path / 's.jsonl.v1.bak'}."]
    assert (tmp_path / "s.jsonl.v1.bak").read_bytes() == original
