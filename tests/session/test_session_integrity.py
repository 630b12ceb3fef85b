"""Session files under faults (issue 8): failed writes, damaged bytes, a second writer, odd entries, modes.

Only the disk is faked, and only where a real fault cannot be made in-process: ``_write_all`` writes
part of its data for real and then fails as a full disk does. Real file-size limits and kill -9 runs
of the CLI are in test_fault_injection.py.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, chain, compaction, header, roles, user

from pi_compact.errors import SessionError
from pi_compact.session.store import SessionStore

NOW = 1_750_000_000_000


def _write(path: Path, entries: list[dict[str, Any]], head: dict[str, Any] | None = None) -> bytes:
    data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in [head or header(), *entries]).encode()
    path.write_bytes(data)
    return data


def _session(path: Path, turns: int = 2) -> bytes:
    messages: list[Any] = []
    for n in range(turns):
        messages += [user(f"question {n}"), assistant(f"answer {n}")]
    return _write(path, chain(*messages))


def _open(path: Path) -> SessionStore:
    return SessionStore.open(path, "/work", NOW)


def _disk_full(monkeypatch: pytest.MonkeyPatch, after: int = 7, ok_writes: int = 0) -> None:
    """After ``ok_writes`` writes, every write stores ``after`` bytes for real, then fails as a full
    disk does."""
    from pi_compact.session import writes

    real = writes._write_all
    done = [0]

    def write_some(fd: int, data: bytes) -> None:
        done[0] += 1
        if done[0] <= ok_writes:
            return real(fd, data)
        os.write(fd, data[:after])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writes, "_write_all", write_some)


# ---- 1. a failed write leaves the file as it was -----------------------------------------------------


def test_failed_append_leaves_the_file_byte_identical_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    before = _session(path)
    store = _open(path)
    leaf, count = store.leaf_id, len(store.entries)
    _disk_full(monkeypatch)
    with pytest.raises(SessionError) as caught:
        store.append_message(user("lost"), NOW)
    assert path.read_bytes() == before
    assert str(caught.value) == (
        f"Could not save to {path} (No space left on device), so the newest message was not saved; the file "
        "is as it was before, so nothing saved earlier was lost."
    )
    assert (store.leaf_id, len(store.entries)) == (leaf, count)


def test_entry_after_a_failed_append_is_parented_to_the_last_saved_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    store = _open(path)
    saved_leaf = store.leaf_id
    with monkeypatch.context() as patch:
        _disk_full(patch)
        with pytest.raises(SessionError):
            store.append_message(user("lost"), NOW)
    entry = store.append_message(user("kept"), NOW)
    assert entry["parentId"] == saved_leaf
    again = _open(path)
    assert again.warnings == ()
    assert [m["content"] for m in again.context().messages if m["role"] == "user"] == [
        "question 0", "question 1", "kept"
    ]


def test_failed_first_write_of_a_new_session_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sessions" / "new.jsonl"
    store = SessionStore.create(path, "/work", NOW)
    store.append_message(user("hi"), NOW)
    _disk_full(monkeypatch)
    with pytest.raises(SessionError, match="nothing saved earlier was lost"):
        store.append_message(assistant("hello"), NOW)
    assert not path.exists()
    assert roles(store.context().messages) == ["user"]


def test_failed_rewrite_of_a_v1_file_leaves_it_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.jsonl"
    before = _write(path, [{"type": "message", "timestamp": "t", "message": user("q")},
                           {"type": "message", "timestamp": "t", "message": assistant("a")}], header(None))
    store = _open(path)
    _disk_full(monkeypatch)
    with pytest.raises(SessionError, match="the file is as it was before"):
        store.append_message(user("q2"), NOW)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]


def test_failed_compaction_write_is_a_failed_compaction_and_leaves_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    before = _session(path, turns=3)
    store = _open(path)
    leaf = store.leaf_id
    _disk_full(monkeypatch, after=100)
    with pytest.raises(SessionError, match="so the newest compaction was not saved"):
        store.append({"type": "compaction", "summary": "s" * 500, "firstKeptEntryId": leaf, "tokensBefore": 9}, NOW)
    assert path.read_bytes() == before
    assert store.leaf_id == leaf and store.branch()[-1]["type"] == "message"


def test_a_reply_that_cannot_be_saved_ends_the_turn_with_the_one_sentence_and_writes_nothing_more(
    scripted_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_harness import make_harness, two_finished_turns
    from scripted_server import Reply

    from pi_compact.agent.events import AgentEnd

    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    before = h.path.read_bytes()
    h.server.enqueue(Reply(text="an answer the full disk will not take"))
    _disk_full(monkeypatch, ok_writes=1)  # the prompt is saved, the reply is not
    with pytest.raises(SessionError) as caught:
        h.session.prompt("and now?")
    assert str(caught.value).startswith(f"Could not save to {h.path} (No space left on device)")
    assert h.events[-1] == AgentEnd(str(caught.value))  # closes the run for JSON-mode readers
    saved = h.path.read_bytes()[len(before):].splitlines()
    assert [json.loads(line)["message"]["role"] for line in saved] == ["user"]  # no failed reply after it
    assert roles(h.session.messages)[-1] == "user"


# ---- 2. damaged bytes cost one line, never the file ----------------------------------------------------


def test_torn_last_line_inside_a_multibyte_character_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = _session(path)
    torn = json.dumps({"type": "message", "id": "x", "parentId": None, "message": user("中文")}, ensure_ascii=False)
    raw = torn.encode()
    path.write_bytes(data + raw[: raw.index("文".encode()) + 2])  # cut inside 文
    store = _open(path)
    assert store.warnings == (f"{path}: line 6 is incomplete (interrupted write); ignored it.",)
    assert len(store.entries) == 4
    store.append_message(user("next"), NOW)
    assert _open(path).context().messages[-1]["content"] == "next"


def test_an_invalid_byte_in_a_middle_line_skips_only_that_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = _session(path).splitlines(keepends=True)
    lines[2] = lines[2][:40] + b"\xff" + lines[2][40:]
    path.write_bytes(b"".join(lines))
    store = _open(path)
    assert store.warnings == (f"{path}: line 3 is not valid UTF-8 text; skipped it.",)
    assert len(store.entries) == 3


def test_print_mode_reports_skipped_lines_on_stderr_and_keeps_stdout_for_the_answer(
    scripted_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scripted_server import Reply
    from typer.testing import CliRunner

    from pi_compact.cli.typer_app import build_app

    path = tmp_path / "s.jsonl"
    lines = _session(path).splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + b"\xff oops\n" + b"".join(lines[2:]))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    scripted_server.enqueue(Reply(text="fine"))
    done = CliRunner().invoke(build_app(), [
        "--model", "openai/scripted", "--api-base", scripted_server.base_url, "--api-key", "test",
        "--context-window", "100000", "--session", str(path), "-p", "go on",
    ])
    assert (done.exit_code, done.stdout) == (0, "fine\n")
    assert done.stderr == f"warning: {path}: line 3 is not valid UTF-8 text; skipped it.\n"


# ---- 3. one writer at a time ------------------------------------------------------------------------------


@pytest.fixture
def quick_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_compact.session import lock

    monkeypatch.setattr(lock, "LOCK_WAIT_S", 0.3)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """Another process with the session open as a live session (holding it)."""
    path = tmp_path / "s.jsonl"
    _session(path)
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from pi_compact.session.store import SessionStore
        store = SessionStore.open(Path({str(path)!r}), "/work", 0, hold=True)
        print("ready", flush=True)
        sys.stdin.read()
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    try:
        yield path, process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def test_a_second_writer_is_refused_naming_the_process_that_holds_the_session(
    holder: tuple[Path, subprocess.Popen[str]], quick_lock: None
) -> None:
    path, process = holder
    before = path.read_bytes()
    store = _open(path)
    with pytest.raises(SessionError) as caught:
        store.append_message(user("behind its back"), NOW)
    assert str(caught.value) == (
        f"Session file {path} is in use by pi-compact (pid {process.pid}); finish or close that session "
        "first, then try again."
    )
    assert path.read_bytes() == before
    with pytest.raises(SessionError, match=f"in use by pi-compact \\(pid {process.pid}\\)"):
        SessionStore.open(path, "/work", NOW, hold=True)


def test_the_lock_is_free_again_when_the_holder_exits(holder: tuple[Path, subprocess.Popen[str]]) -> None:
    path, process = holder
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=30)
    store = SessionStore.open(path, "/work", NOW, hold=True)
    store.append_message(user("mine now"), NOW)
    store.close()
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.jsonl"]  # the lock file went with it


def test_append_is_refused_when_another_program_appended_since_reading(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    store = _open(path)
    theirs = json.dumps({"type": "message", "id": "pi1", "parentId": store.leaf_id, "timestamp": "t",
                         "message": user("written by pi")}) + "\n"
    with open(path, "a", encoding="utf-8") as other:
        other.write(theirs)
    after_theirs = path.read_bytes()
    with pytest.raises(SessionError, match="was changed by another program since pi-compact read it"):
        store.append_message(user("stale parent"), NOW)
    assert path.read_bytes() == after_theirs
    assert _open(path).context().messages[-1]["content"] == "written by pi"


def test_two_sessions_creating_the_same_file_write_one_header(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    first, second = (SessionStore.create(path, "/work", NOW) for _ in range(2))
    for store in (first, second):
        store.append_message(user("hi"), NOW)
    first.append_message(assistant("first"), NOW)
    with pytest.raises(SessionError, match="was created by another program meanwhile"):
        second.append_message(assistant("second"), NOW)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["type"] for line in lines] == ["session", "message", "message"]


def test_rewrite_leaves_another_programs_temporary_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    other = tmp_path / "empty.jsonl.tmp"
    other.write_text("someone else's", encoding="utf-8")
    store = _open(path)
    store.append_message(user("q"), NOW)
    store.append_message(assistant("a"), NOW)
    assert other.read_text(encoding="utf-8") == "someone else's"
    assert roles(_open(path).context().messages) == ["user", "assistant"]


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_rewrite_keeps_the_file_mode(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "old.jsonl"
    _write(path, [{"type": "message", "timestamp": "t", "message": user("q")},
                  {"type": "message", "timestamp": "t", "message": assistant("a")}], header(None))
    path.chmod(mode)
    _open(path).append_message(user("q2"), NOW)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert _open(path).header["version"] == 3


def test_rewrite_keeps_a_symlinked_session_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "store" / "old.jsonl"
    real.parent.mkdir()
    _write(real, [{"type": "message", "timestamp": "t", "message": user("q")},
                  {"type": "message", "timestamp": "t", "message": assistant("a")}], header(None))
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    _open(link).append_message(user("q2"), NOW)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert roles(_open(real).context().messages) == ["user", "assistant", "user"]


# ---- 4. entries of the wrong shape are skipped like malformed lines ----------------------------------------

_DEEP = json.loads("[" * 500 + "]" * 500)
_WRONG = {
    "message is a string": lambda e: {**e, "message": "hello"},
    "content is a number": lambda e: {**e, "message": {**e["message"], "content": 5}},
    "role is a list": lambda e: {**e, "message": {**e["message"], "role": []}},
    "usage holds text": lambda e: {**e, "message": {**e["message"], "usage": {"input": "abc"}}},
    "text is a number": lambda e: {**e, "message": {**e["message"], "content": [{"type": "text", "text": 5}]}},
    "tool arguments nested 500 deep": lambda e: {**e, "message": {**e["message"], "content": [
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": _DEEP}}]}},
}


@pytest.mark.parametrize("damage", _WRONG.values(), ids=_WRONG.keys())
def test_a_wrongly_shaped_message_is_skipped_with_a_warning_and_the_rest_kept(tmp_path: Path, damage: Any) -> None:
    path = tmp_path / "s.jsonl"
    entries = chain(user("q0"), assistant("a0"), user("q1"), assistant("a1"), user("q2"))
    entries[3] = damage(entries[3])
    _write(path, entries)
    store = _open(path)
    assert len(store.warnings) == 1 and store.warnings[0].startswith(f"{path}: line 5 cannot be used (")
    assert store.warnings[0].endswith("; skipped it.")
    # The skipped entry's child hangs on its parent: the conversation before it stays in the context.
    assert [m["content"][0]["text"] if m["role"] == "assistant" else m["content"]
            for m in store.context().messages] == ["q0", "a0", "q1", "q2"]
    assert store.append_message(user("q3"), NOW)["parentId"] == entries[4]["id"]


def test_a_compaction_with_text_for_tokens_before_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    tokens: Any = "abc"
    entries = chain(user("q0"), assistant("a0"), compaction("summary", "test-id-0", tokens), user("q1"))
    _write(path, entries)
    store = _open(path)
    assert store.warnings == (
        f"{path}: line 4 cannot be used (its tokensBefore is not a number); skipped it.",
    )
    assert roles(store.context().messages) == ["user", "assistant", "user"]


def test_a_line_nested_too_deeply_to_parse_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = _session(path)
    path.write_bytes(data + b'{"type":"custom","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    assert _open(path).warnings == (f"{path}: line 6 is nested too deeply; skipped it.",)


def test_every_wrongly_typed_field_either_loads_or_is_skipped(tmp_path: Path) -> None:
    """Each field of a realistic session set to each wrong type: loading, the context, token counts,
    the request and the compaction plan never raise."""
    from builders import coding_session

    from pi_compact.compaction.preview import dry_run
    from pi_compact.compaction.tokens import estimate_tokens_auto
    from pi_compact.llm.convert import to_openai_messages
    from pi_compact.messages import convert_to_llm
    from pi_compact.settings import CompactionSettings

    base = chain(*coding_session()[:10], compaction("s", "test-id-6", 10, details={"readFiles": ["a"]},
                                                    retained_tail=[coding_session()[10]["message"]]),
                 *coding_session()[10:])
    path = tmp_path / "s.jsonl"
    settings = CompactionSettings(keep_recent_tokens=400, reserve_tokens=1000)
    wrong: list[Any] = ["x", 5, 1.5, None, True, [], {}, [5], [{"type": 5}], [{"type": "text", "text": 5}], 1e400]
    checked = 0
    for index in range(0, len(base), 2):
        for key_path in _paths(base[index]):
            for value in wrong:
                entries = json.loads(json.dumps(base))
                _set(entries[index], key_path, value)
                _write(path, entries)
                store = _open(path)
                messages = store.context().messages
                to_openai_messages("system", convert_to_llm(messages))
                sum(map(estimate_tokens_auto, messages))
                b"".join(dry_run(store.branch(), settings, 10_000).json_chunks())
                checked += 1
    assert checked > 1000


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    items = value.items() if isinstance(value, dict) else enumerate(value[:2]) if isinstance(value, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


def _set(target: Any, key_path: tuple[Any, ...], value: Any) -> None:
    for key in key_path[:-1]:
        target = target[key]
    target[key_path[-1]] = value


def test_a_deeply_nested_settings_file_is_ignored_with_a_warning(tmp_path: Path) -> None:
    from pi_compact.settings.files import read_settings_file

    path = tmp_path / "settings.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert read_settings_file(path) == ({}, [
        f"Ignoring settings file {path}: its JSON is nested too deeply to read; fix it or delete it."
    ])


# ---- 9. transcripts are the user's only -------------------------------------------------------------------


def test_a_new_session_file_and_its_directories_are_user_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "agent" / "sessions" / "--work--" / "s.jsonl"
        store = SessionStore.create(path, "/work", NOW)
        store.append_message(user("cat .env"), NOW)
        store.append_message(assistant("SECRET=1"), NOW)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (tmp_path / "agent", tmp_path / "agent" / "sessions", path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_the_prompt_history_file_is_user_only(tmp_path: Path) -> None:
    from pi_compact.ui.input import open_history

    fresh = tmp_path / "state" / "pi-compact" / "history"
    open_history(fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert stat.S_IMODE(fresh.parent.stat().st_mode) == 0o700
    older = tmp_path / "history"
    older.write_text("+cat .env\n", encoding="utf-8")
    older.chmod(0o644)
    open_history(older)
    assert stat.S_IMODE(older.stat().st_mode) == 0o600
