"""Files that hold the conversation are private: ``/export`` (0600, next to the session files, never over
an existing file without asking) and the local model's saved prompt prefixes (folder 0700, files 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from builders import assistant, chain, header, user, write_session
from fakes.slot import FakeSlot
from ui_harness import FakeModel, make_state

from pi_compact.llm.local.prefix import PrefixCache
from pi_compact.ui.commands import dispatch


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _session(project: Path) -> None:
    write_session(project / "s.jsonl", chain(user("the secret plan"), assistant("noted")), header())


def test_export_goes_next_to_the_session_files_0600_not_into_the_working_tree(project: Path) -> None:
    sessions = project.parent / "sessions"
    sessions.mkdir()
    _session(project)
    state, buffer = make_state(project, FakeModel())
    state.session.store.path = sessions / "s.jsonl"  # as if opened there: only the export's target matters
    dispatch(state, "/export")
    target = sessions / "s.html"
    assert f"Exported the session to {target}" in buffer.getvalue()
    assert "the secret plan" in target.read_text(encoding="utf-8")
    assert _mode(target) == 0o600
    assert not any(p.suffix == ".html" for p in project.iterdir())
    # A session kept in memory only: its folder is the sessions directory for this cwd, created private.
    state.session.store.path = None
    dispatch(state, "/export")
    exported = list((project.parent / "agent" / "sessions").rglob("session.html"))
    assert len(exported) == 1 and _mode(exported[0]) == 0o600 and _mode(exported[0].parent) == 0o700


def test_export_to_a_named_file_is_0600_and_an_existing_file_is_not_overwritten_unasked(
    project: Path,
) -> None:
    _session(project)
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/export named.html")
    assert _mode(project / "named.html") == 0o600
    precious = project / "README.html"
    precious.write_text("mine")
    os.chmod(precious, 0o644)
    dispatch(state, "/export README.html")  # no terminal to ask on: refused
    assert precious.read_text() == "mine"
    assert "exists; not overwritten" in buffer.getvalue()
    elsewhere = project.parent / "elsewhere.txt"
    elsewhere.write_text("theirs")
    (project / "link.html").symlink_to(elsewhere)
    dispatch(state, "/export link.html")
    assert elsewhere.read_text() == "theirs"


def test_the_prefix_cache_folder_is_0700_and_its_files_0600(tmp_path: Path) -> None:
    folder = tmp_path / "prefixes"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    (folder / "old.slot").write_bytes(b"kv")
    os.chmod(folder / "old.slot", 0o644)
    slot = FakeSlot(folder)
    cache = PrefixCache(folder, slot)
    assert _mode(folder) == 0o700 and _mode(folder / "old.slot") == 0o600  # an older run's file too
    cache.before("k1")
    assert cache.after("k1", 100)
    assert _mode(folder / "k1.slot") == 0o600
