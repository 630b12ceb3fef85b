"""bash: exit codes, output tail, and killing the whole process group on timeout or cancel."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pi_compact.agent.tools import BashTool, ToolContext, run_tool
from pi_compact.cancel import CancelToken


def _alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (dead, waiting to be reaped by init) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: fall back to a signal-0 probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _wait_for_pid_file(path: Path) -> int:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.01)
    raise AssertionError(f"{path} was never written")


def test_bash_reports_output_and_zero_exit(tmp_path: Path) -> None:
    out = run_tool(BashTool(), {"command": "echo hello; echo oops >&2"}, ToolContext(cwd=tmp_path))
    assert not out.is_error
    assert out.text == "hello\noops\n\n[Exit code: 0]"
    assert out.details == {"exitCode": 0}


def test_bash_non_zero_exit_is_error_with_output(tmp_path: Path) -> None:
    out = run_tool(BashTool(), {"command": "echo partial; exit 7"}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == "partial\n\n[Exit code: 7]"


def test_bash_runs_in_context_cwd_with_spaces_and_non_ascii(tmp_path: Path) -> None:
    folder = tmp_path / "dir with space" / "目录"
    folder.mkdir(parents=True)
    out = run_tool(BashTool(), {"command": "pwd"}, ToolContext(cwd=folder))
    assert out.text.split("\n")[0] == str(folder)


def test_bash_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"sleep 30 & echo $! > '{pid_file}'; sleep 30; "
    start = time.monotonic()
    out = run_tool(BashTool(), {"command": command, "timeout": 0.5}, ToolContext(cwd=tmp_path))
    assert time.monotonic() - start < 5
    assert out.is_error
    assert "[Command timed out after 0.5 s; its process group was killed.]" in out.text
    child = _wait_for_pid_file(pid_file)
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def test_bash_cancel_event_stops_promptly(tmp_path: Path) -> None:
    cancel = CancelToken()
    timer = threading.Timer(0.2, cancel.cancel)
    timer.start()
    start = time.monotonic()
    out = run_tool(BashTool(), {"command": "sleep 30 & sleep 30"}, ToolContext(cwd=tmp_path, cancel=cancel))
    elapsed = time.monotonic() - start
    timer.join()
    assert elapsed < 1.0
    assert out.is_error
    assert "[Command cancelled; its process group was killed.]" in out.text


def test_bash_output_cap_keeps_the_tail_with_notice(tmp_path: Path) -> None:
    out = run_tool(BashTool(), {"command": "seq 1 5000"}, ToolContext(cwd=tmp_path))
    lines = out.text.split("\n")
    assert lines[0] == "3001"
    assert lines[1999] == "5000"
    assert lines[2001].startswith("[Output truncated: showing the last 2000 of 5000 lines")
    assert lines[-1] == "[Exit code: 0]"
    assert not out.is_error


def test_bash_output_cap_by_bytes_keeps_the_last_line(tmp_path: Path) -> None:
    command = "python3 -c \"print('a' * 40000); print('b' * 40000)\""
    out = run_tool(BashTool(), {"command": command}, ToolContext(cwd=tmp_path))
    assert out.text.split("\n")[0] == "b" * 40000
    assert "[Output truncated: showing the last 1 of 2 lines" in out.text


def test_bash_rejects_non_positive_timeout(tmp_path: Path) -> None:
    out = run_tool(BashTool(), {"command": "true", "timeout": -1}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == "timeout must be a positive number of seconds, got -1."


def _kill_if_alive(pid_file: Path) -> None:
    if pid_file.exists() and pid_file.read_text().strip():
        try:
            os.kill(int(pid_file.read_text()), 9)
        except ProcessLookupError:
            pass


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


@pytest.mark.parametrize("launch", ["sleep 30 &", "nohup sleep 30 &"])
def test_background_job_holding_the_pipe_does_not_hold_the_call(tmp_path: Path, launch: str) -> None:
    pid_file = tmp_path / "job.pid"
    command = f"{launch} echo $! > '{pid_file}'; echo started"
    try:
        out = run_tool(BashTool(), {"command": command, "timeout": 8}, ToolContext(cwd=tmp_path))
        assert out.text == "started\n\n[Exit code: 0]"
        assert out.details == {"exitCode": 0}
        assert _alive(_wait_for_pid_file(pid_file))  # the job itself is left running, as it was asked
    finally:
        _kill_if_alive(pid_file)


def test_output_before_exit_is_complete_despite_background_job(tmp_path: Path) -> None:
    pid_file = tmp_path / "job.pid"
    command = f"sleep 30 & echo $! > '{pid_file}'; seq 1 1500"
    try:
        out = run_tool(BashTool(), {"command": command, "timeout": 8}, ToolContext(cwd=tmp_path))
        assert out.text.split("\n")[:1500] == [str(n) for n in range(1, 1501)]
        assert out.text.endswith("1500\n\n[Exit code: 0]")
    finally:
        _kill_if_alive(pid_file)


@pytest.mark.parametrize(
    "spawn",
    [
        """setsid sh -c 'echo $$ > "{pid}"; exec sleep 30' &""",  # own session, shell still its parent
        """(setsid sh -c 'echo $$ > "{pid}"; exec sleep 30' &)""",  # own session and orphaned: parent gone
    ],
)
def test_timeout_kills_children_that_left_the_process_group(tmp_path: Path, spawn: str) -> None:
    pid_file = tmp_path / "escaped.pid"
    command = spawn.format(pid=pid_file) + f"\nwhile [ ! -s '{pid_file}' ]; do sleep 0.01; done; sleep 30"
    try:
        out = run_tool(BashTool(), {"command": command, "timeout": 1}, ToolContext(cwd=tmp_path))
        assert "[Command timed out after 1 s; its process group was killed.]" in out.text
        assert _gone_within(_wait_for_pid_file(pid_file), 5)
    finally:
        _kill_if_alive(pid_file)


def test_cancel_kills_children_that_left_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    command = f"(setsid sh -c 'echo $$ > \"{pid_file}\"; exec sleep 30' &); sleep 30"
    cancel = CancelToken()

    def cancel_once_spawned() -> None:
        _wait_for_pid_file(pid_file)
        cancel.cancel()

    try:
        threading.Thread(target=cancel_once_spawned, daemon=True).start()
        out = run_tool(BashTool(), {"command": command}, ToolContext(cwd=tmp_path, cancel=cancel))
        assert "[Command cancelled; its process group was killed.]" in out.text
        assert _gone_within(_wait_for_pid_file(pid_file), 5)
    finally:
        _kill_if_alive(pid_file)
