"""write and edit replace files atomically: a kill never truncates, and links, modes and owners survive."""

from __future__ import annotations

import os
import random
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deadline import run_within

from pi_compact.agent.tools import EditTool, ToolContext, WriteTool, atomic_write, run_tool

_SIZE = 1 << 20  # big enough that a kill usually lands inside the write

# The child writes (or edits) the same file for ever, alternating between two versions of it.
_CHILD = r"""
import sys
from pathlib import Path
from pi_compact.agent.tools import EditTool, ToolContext, WriteTool, run_tool

tool_name, target, size = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
ctx = ToolContext(cwd=target.parent)
versions = ["A" * size, "B" * (size // 2)]
edits = [("<<one>>", "<<two>>"), ("<<two>>", "<<one>>")]
# An earlier round may have left either marker in place: start from the one that is there.
turn = 0 if tool_name == "write" or b"<<one>>" in target.read_bytes() else 1
print("ready", flush=True)
while True:
    if tool_name == "write":
        args = {"path": target.name, "content": versions[turn % 2]}
        out = run_tool(WriteTool(), args, ctx)
    else:
        old, new = edits[turn % 2]
        out = run_tool(EditTool(), {"path": target.name, "oldText": old, "newText": new}, ctx)
    assert not out.is_error, out.text
    turn += 1
"""


def _wait_for_a_write(target: Path, sizes: set[int], present: set[str], seconds: float) -> None:
    """Sleep up to ``seconds``, returning early the moment a write is seen under way.

    Under way means a new file beside the target (a temporary; ``present`` lists the names there before
    the child started), or the target at a size no whole version has.
    Killing right then aims at the dangerous moments instead of hoping a random instant hits one.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not present.issuperset(os.listdir(target.parent)) or target.stat().st_size not in sizes:
            return


def _kill_mid_call(tmp_path: Path, tool_name: str, kills: int) -> list[int]:
    """Sizes of the file after each ``kill -9`` that left it neither the old nor the new version."""
    (tmp_path / "work").mkdir()
    target = tmp_path / "work" / "user_file.txt"
    if tool_name == "write":
        initial = b"original\n"
        valid = {initial, b"A" * _SIZE, b"B" * (_SIZE // 2)}
    else:
        initial = b"x" * _SIZE + b"<<one>>" + b"y" * 100
        valid = {initial, initial.replace(b"<<one>>", b"<<two>>")}
    target.write_bytes(initial)
    sizes = {len(version) for version in valid}
    rng = random.Random(8)
    bad: list[int] = []
    for round_no in range(kills):
        present = set(os.listdir(target.parent))  # temporaries an earlier kill left do not count
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, tool_name, str(target), str(_SIZE)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "ready\n"
            if round_no % 2:
                _wait_for_a_write(target, sizes, present, rng.uniform(0.0, 0.03))
            else:
                time.sleep(rng.uniform(0.0, 0.03))
        finally:
            child.kill()
            child.wait(timeout=10)
            if child.stdout is not None:
                child.stdout.close()
        content = target.read_bytes()
        if content not in valid:
            bad.append(len(content))
            target.write_bytes(initial)  # start the next round from a whole file again
    return bad


@pytest.mark.parametrize("tool_name", ["write", "edit"])
def test_kill_9_mid_call_never_leaves_user_file_truncated(tmp_path: Path, tool_name: str) -> None:
    assert _kill_mid_call(tmp_path, tool_name, kills=10) == []


def test_write_through_symlink_updates_target_and_keeps_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "config.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real/config.txt")
    out = run_tool(WriteTool(), {"path": "link.txt", "content": "new\n"}, ToolContext(cwd=tmp_path))
    assert out.text == "Overwrote link.txt: wrote 4 bytes."
    assert (tmp_path / "link.txt").is_symlink()
    assert os.readlink(tmp_path / "link.txt") == "real/config.txt"
    assert (tmp_path / "real" / "config.txt").read_text() == "new\n"


def test_edit_through_symlink_updates_target_and_keeps_link(tmp_path: Path) -> None:
    (tmp_path / "target.py").write_text("x = 1\n")
    (tmp_path / "alias.py").symlink_to(tmp_path / "target.py")
    args = {"path": "alias.py", "oldText": "x = 1", "newText": "x = 2"}
    out = run_tool(EditTool(), args, ToolContext(cwd=tmp_path))
    assert not out.is_error
    assert (tmp_path / "alias.py").is_symlink()
    assert (tmp_path / "target.py").read_text() == "x = 2\n"


def test_write_through_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    (tmp_path / "later.txt").symlink_to("made/later-target.txt")
    out = run_tool(WriteTool(), {"path": "later.txt", "content": "hi"}, ToolContext(cwd=tmp_path))
    assert out.text == "Created later.txt: wrote 2 bytes."
    assert (tmp_path / "later.txt").is_symlink()
    assert (tmp_path / "made" / "later-target.txt").read_text() == "hi"


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o4750])
def test_write_and_edit_keep_permission_bits(tmp_path: Path, mode: int) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo one\n")
    script.chmod(mode)
    ctx = ToolContext(cwd=tmp_path)
    run_tool(WriteTool(), {"path": "run.sh", "content": "echo two\n"}, ctx)
    assert stat.S_IMODE(script.stat().st_mode) == mode
    run_tool(EditTool(), {"path": "run.sh", "oldText": "two", "newText": "three"}, ctx)
    assert stat.S_IMODE(script.stat().st_mode) == mode
    assert script.read_text() == "echo three\n"


def test_new_file_gets_default_mode_from_umask(tmp_path: Path) -> None:
    old_umask = os.umask(0o027)
    try:
        run_tool(WriteTool(), {"path": "fresh.txt", "content": "x"}, ToolContext(cwd=tmp_path))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "fresh.txt").stat().st_mode) == 0o640


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving files away needs root")
def test_write_keeps_owner_and_group(tmp_path: Path) -> None:
    owned = tmp_path / "owned.txt"
    owned.write_text("old")
    os.chown(owned, 4321, 4322)
    run_tool(WriteTool(), {"path": "owned.txt", "content": "new"}, ToolContext(cwd=tmp_path))
    info = owned.stat()
    assert (info.st_uid, info.st_gid) == (4321, 4322)
    assert owned.read_text() == "new"


def test_failed_replace_leaves_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "keep.txt").write_text("precious\n")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    out = run_tool(WriteTool(), {"path": "keep.txt", "content": "new"}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == f"write failed: No space left on device: {tmp_path / 'keep.txt'}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert (tmp_path / "keep.txt").read_text() == "precious\n"


def test_write_to_fifo_is_refused_and_fifo_kept(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    out = run_within(WriteTool(), {"path": "pipe", "content": "x"}, ToolContext(cwd=tmp_path), seconds=10)
    assert out.is_error
    assert out.text == "pipe is a FIFO (named pipe), not a regular file; write only replaces regular files."
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)


def test_edit_of_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    args = {"path": "pipe", "oldText": "a", "newText": "b"}
    out = run_within(EditTool(), args, ToolContext(cwd=tmp_path), seconds=10)
    assert out.is_error
    assert out.text == "pipe is a FIFO (named pipe), not a regular file; edit only changes regular files."


def test_write_removes_temporaries_of_killed_writers_only(tmp_path: Path) -> None:
    dead = tmp_path / f".notes.txt.99999999-0badf00d{atomic_write.TEMP_SUFFIX}"
    live = tmp_path / f".notes.txt.{os.getpid()}-0000beef{atomic_write.TEMP_SUFFIX}"
    dead.write_text("half a write")
    live.write_text("a write under way")
    run_tool(WriteTool(), {"path": "notes.txt", "content": "done"}, ToolContext(cwd=tmp_path))
    assert sorted(path.name for path in tmp_path.iterdir()) == [live.name, "notes.txt"]


def test_unwritable_directory_error_names_the_file_and_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "locked.txt").write_text("old")
    real_open = os.open

    def deny_temporaries(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        if str(path).endswith(atomic_write.TEMP_SUFFIX):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", deny_temporaries)
    out = run_tool(WriteTool(), {"path": "locked.txt", "content": "new"}, ToolContext(cwd=tmp_path))
    assert out.text == (
        f"write failed: Permission denied to create a file in {tmp_path}, needed to replace the file "
        f"safely: {tmp_path / 'locked.txt'}"
    )
    assert (tmp_path / "locked.txt").read_text() == "old"
