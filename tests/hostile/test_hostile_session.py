"""Session locks under odd conditions: a second terminal on a held session is refused before its prompt
(nothing typed is lost), and a lock path that is a directory is named as the lock, not the session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import assistant, chain, header, user, write_session

from pi_compact.cli.wiring import AppRuntimes
from pi_compact.errors import SessionError
from pi_compact.options import AppOptions
from pi_compact.session.store import SessionStore
from pi_compact.settings.files import load_settings
from pi_compact.ui import repl as repl_module

HOLDER = """
import sys, time
from pathlib import Path
from pi_compact.session.lock import SessionLock
lock = SessionLock.acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_terminal_on_a_held_session_refuses_before_its_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    path = tmp_path / "s.jsonl"
    write_session(path, chain(user("hi"), assistant("hello")), header())
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(repl_module.Repl, "loop", lambda self: pytest.fail("the prompt was shown"))
        options = AppOptions(cwd=tmp_path, session=path)
        with pytest.raises(SessionError, match=rf"in use by pi-compact \(pid {holder.pid}\)"):
            repl_module.run_repl(AppRuntimes(options), load_settings(tmp_path))
        # -c finds the same file and refuses the same way.
        options = AppOptions(cwd=tmp_path, continue_recent=True, session_dir=str(tmp_path))
        with pytest.raises(SessionError, match="in use by"):
            repl_module.run_repl(AppRuntimes(options), load_settings(tmp_path))
    finally:
        holder.kill()
        holder.wait()
    started = time.monotonic()
    SessionStore.open(path, str(tmp_path), 0, hold=True).close()  # free again once the holder is gone
    assert time.monotonic() - started < 5


def test_a_lock_path_that_is_a_directory_is_reported_as_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, chain(user("hi"), assistant("hello")), header())
    (tmp_path / "s.jsonl.lock").mkdir()
    store = SessionStore.open(path, str(tmp_path), 0)
    with pytest.raises(SessionError) as caught:
        store.append_message(user("more"), 1)
    text = str(caught.value)
    assert f"lock file {tmp_path / 's.jsonl.lock'} is a directory" in text
    assert path.read_text(encoding="utf-8").count("\n") == 3  # nothing written
