"""Finding every process a ``bash`` call started, including those that left its process group.

Killing the call's process group misses a child that ran ``setsid`` (new session, new group) or whose
parent exited (it is re-parented to init, so the parent chain is cut). Three marks are used, read from
``/proc`` at kill time:

- the call's process group or session (the shell's pid, as it is started as a session leader);
- descent: the parent chain leads to the shell or to a process already found, or the process is in
  a group or session led by one;
- a marker variable ``PI_COMPACT_CALL_<token>`` in the process's initial environment, which every
  descendant inherits unless it clears its environment on purpose.

Without ``/proc`` (macOS) ``call_processes`` returns an empty set and only the group kill applies.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

_MARKER_PREFIX = "PI_COMPACT_CALL_"


def new_marker() -> str:
    """A fresh environment variable name that tags one call's processes."""
    return f"{_MARKER_PREFIX}{secrets.token_hex(8)}"


@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int


def call_processes(leader: int, marker: str) -> set[int]:
    """Live pids belonging to the call whose shell is ``leader`` (see the module docstring)."""
    procs = _live_processes()
    found = {leader} if leader in procs else set()
    found |= {p.pid for p in procs.values() if p.pgid == leader or p.sid == leader}
    needle = f"{marker}=".encode()
    for proc in procs.values():
        if proc.pid not in found and _environment_has(proc.pid, needle):
            found.add(proc.pid)
    grew = True
    while grew:  # close over descent: children, and groups or sessions led by a found process
        before = len(found)
        found |= {p.pid for p in procs.values() if p.ppid in found or p.pgid in found or p.sid in found}
        grew = len(found) > before
    found.discard(os.getpid())  # never the agent itself
    return found


def _live_processes() -> dict[int, _Proc]:
    """Every process visible in /proc that is not a zombie, by pid."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    procs: dict[int, _Proc] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # exited while we looked
        # The command name is in parentheses and may itself hold spaces or parentheses.
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) < 4 or fields[0] in (b"Z", b"X"):
            continue
        procs[int(entry)] = _Proc(int(entry), int(fields[1]), int(fields[2]), int(fields[3]))
    return procs


def _environment_has(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return any(item.startswith(needle) for item in handle.read().split(b"\0"))
    except OSError:
        return False  # another user's process, or gone
