"""Fault injection against the real CLI: kill -9 at random points, a full disk, a second writer.

Shared by tests/test_fault_injection.py (a few rounds, in CI) and benchmarks/bench_fault_injection.py
(hundreds). Every round runs ``python -m pi_compact`` as a user does, against a scripted model server
in this process, in its own directory, and then checks what a user would care about:

- the session still opens (``SessionStore.open`` raises nothing);
- no complete entry is lost: every entry that was on the branch before the round, and every complete
  line the round left in the file, is on the branch of the reopened session;
- no user file is truncated: the file the agent's ``write`` tool rewrites holds one whole version.

The agent writes large entries (hundreds of KB, half of it CJK, so a cut lands inside a multi-byte
character) so that a kill often lands in a write. Kills come either after a random delay from the
model's first request, or as soon as a given number of writes to the session or user file has been
seen (polling their sizes), which lands inside or right after a write.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.compaction.prompts import HISTORY_HEADINGS
from pi_compact.session.store import SessionStore

WINDOW = 1_000_000  # large: the summarizer gets the big entries in one request
OVER_THRESHOLD = WINDOW - 1_000
SETTINGS = {
    "retry": {"maxRetries": 0},
    "compaction": {"reserveTokens": 2_000, "keepRecentTokens": 2_000, "tokenEstimator": "auto"},
}
HEADINGS = HISTORY_HEADINGS
USER_FILE = "notes.md"


def text_of(size: int, seed: int) -> str:
    """About ``size`` bytes of UTF-8 text, alternating CJK and ASCII runs (deterministic)."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        if rng.random() < 0.5:
            run = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(20, 200)))
        else:
            run = " ".join(f"word{rng.randint(0, 999)}" for _ in range(rng.randint(5, 60)))
        parts.append(run)
        total += len(run.encode())
    return "\n".join(parts)


def summary_text(size: int, seed: int) -> str:
    return "\n\n".join(f"{heading}\n- {text_of(size // len(HEADINGS), seed + i)}" for i, heading in
                       enumerate(HEADINGS))


class RoutedServer(ScriptedServer):
    """Agent requests (they offer tools) take the queued replies; summary requests get ``summary``."""

    def __init__(self, summary: Reply) -> None:
        super().__init__()
        self.summary = summary

    def _record_and_next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        if body.get("tools"):
            return super()._record_and_next(body, headers)
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)
        return self.summary


@dataclass
class Workspace:
    """An agent directory (settings), a project directory (the user file) and one session file."""

    root: Path
    versions: set[str] = field(default_factory=set)  # every content the user file may hold
    expected: set[str] = field(default_factory=set)  # ids that must stay on the branch

    @classmethod
    def make(cls, root: Path) -> Workspace:
        (root / "agent").mkdir(parents=True, exist_ok=True)
        (root / "agent" / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
        (root / "proj").mkdir(exist_ok=True)
        first = "the user's own notes\n"
        (root / "proj" / USER_FILE).write_text(first, encoding="utf-8")
        return cls(root, {first})

    @property
    def session(self) -> Path:
        return self.root / "session.jsonl"

    @property
    def user_file(self) -> Path:
        return self.root / "proj" / USER_FILE

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PI_CODING_AGENT"))}
        env.update({"PI_CODING_AGENT_DIR": str(self.root / "agent"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "LITELLM_OFFLINE_MODE": "true", "NO_COLOR": "1", "COLUMNS": "200"})
        return env


def model_args(server: ScriptedServer) -> list[str]:
    return ["--model", "openai/scripted", "--api-base", server.base_url, "--api-key", "test",
            "--context-window", str(WINDOW)]


def agent_command(workspace: Workspace, server: ScriptedServer) -> list[str]:
    return [sys.executable, "-m", "pi_compact", *model_args(server), "--session", str(workspace.session),
            "-p", "Rewrite the notes twice, then report."]


def compact_command(workspace: Workspace, server: ScriptedServer) -> list[str]:
    return [sys.executable, "-m", "pi_compact", "compact", str(workspace.session), *model_args(server)]


def agent_server(workspace: Workspace, seed: int, size: int, delay_s: float = 0.0) -> RoutedServer:
    """A tool loop: write the user file, a long answer past the threshold (compaction), write it
    again, answer (the first reply after ``delay_s``). The written versions are recorded as valid
    contents of the user file."""
    first, second = text_of(size, seed), text_of(size, seed + 1)
    workspace.versions.update({first, second})
    server = RoutedServer(Reply(text=summary_text(size // 2, seed + 2)))
    server.enqueue(
        Reply(tool_calls=(ToolCallReply("write", {"path": USER_FILE, "content": first}),), prompt_tokens=1_000,
              delay_s=delay_s),
        Reply(text=text_of(size, seed + 3), tool_calls=(ToolCallReply("bash", {"command": "echo checked"}),),
              prompt_tokens=OVER_THRESHOLD),
        Reply(tool_calls=(ToolCallReply("write", {"path": USER_FILE, "content": second}),), prompt_tokens=2_000),
        Reply(text="Done: " + text_of(size // 4, seed + 4), prompt_tokens=2_500),
    )
    return server.start()


def compact_server(seed: int, size: int) -> RoutedServer:
    return RoutedServer(Reply(text=summary_text(size, seed))).start()


# ---- running a process, maybe killing it -------------------------------------------------------------


@dataclass(frozen=True)
class Kill:
    """When to kill -9: ``delay_s`` after the first model request, or at the ``writes``-th observed
    change of the session file (of the user file with ``user_file``)."""

    delay_s: float | None = None
    writes: int | None = None
    user_file: bool = False

    @classmethod
    def random(cls, rng: random.Random, span_s: float) -> Kill:
        if rng.random() < 0.4:
            return cls(delay_s=rng.uniform(0, span_s))
        if rng.random() < 0.25:
            return cls(writes=rng.randint(1, 2), user_file=True)
        return cls(writes=rng.randint(1, 6))


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    killed: bool


def file_size_limit(limit: int) -> Callable[[], None]:
    """A preexec_fn: cap file sizes at ``limit`` bytes, with SIGXFSZ ignored so a write fails (EFBIG)."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def run(command: list[str], workspace: Workspace, server: ScriptedServer, kill: Kill | None = None,
        preexec: Callable[[], None] | None = None, timeout_s: float = 120) -> Run:
    """Run ``command`` in the project directory; kill it as ``kill`` says (if it is still running)."""
    # errors="replace": output cut off by a kill may end inside a multi-byte character.
    process = subprocess.Popen(command, cwd=workspace.root / "proj", env=workspace.env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, encoding="utf-8", errors="replace", preexec_fn=preexec)
    killed = False
    try:
        if kill is not None:
            killed = _kill_when(process, kill, workspace, server, time.monotonic() + timeout_s)
        out, err = process.communicate(timeout=timeout_s)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return Run(process.returncode, out, err, killed)


def _kill_when(process: subprocess.Popen[str], kill: Kill, workspace: Workspace, server: ScriptedServer,
               deadline: float) -> bool:
    while not server.requests and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if kill.delay_s is not None:
        end = time.monotonic() + kill.delay_s
        while time.monotonic() < end and process.poll() is None:
            time.sleep(0.001)
    else:
        # As tight a loop as possible: a change is often seen while the write is still going on.
        watched = workspace.user_file if kill.user_file else workspace.session
        size = _size(watched)
        seen = 0
        while process.poll() is None and time.monotonic() < deadline:
            now = _size(watched)
            if now != size:
                seen += 1
                size = now
                if seen >= (kill.writes or 1):
                    break
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGKILL)
    process.wait()
    return True


# ---- checking the damage -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    unopenable: bool
    lost: int  # complete entries not on the reopened branch
    truncated: bool  # the user file holds no whole version
    torn: bool  # the session file ends inside a line (the kill landed in a write)
    skipped: int  # lines skipped when reading (torn lines from this and earlier rounds)
    problem: str = ""


def complete_ids(path: Path) -> set[str]:
    """Ids of the file's complete lines (newline-terminated JSON objects)."""
    ids: set[str] = set()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ids
    for line in data.split(b"\n")[:-1]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str) and value.get("type") != "session":
            ids.add(value["id"])
    return ids


def verify(workspace: Workspace) -> Verdict:
    """Check the workspace after a round, and remember what is on the branch for the next one."""
    path = workspace.session
    data = path.read_bytes() if path.exists() else b""
    torn = bool(data) and not data.endswith(b"\n")
    truncated = workspace.user_file.read_text(encoding="utf-8", errors="replace") not in workspace.versions
    if truncated:  # counted once: the next round starts from a whole file again
        workspace.user_file.write_text(min(workspace.versions, key=len), encoding="utf-8")
    try:
        store = SessionStore.open(path, str(workspace.root), 0)
    except Exception as exc:  # noqa: BLE001 - any failure to open counts, whatever it is
        return Verdict(True, len(workspace.expected), truncated, torn, 0, f"{type(exc).__name__}: {exc}")
    on_branch = {entry["id"] for entry in store.branch() if isinstance(entry.get("id"), str)}
    missing = (workspace.expected | complete_ids(path)) - on_branch
    workspace.expected = on_branch
    problem = f"missing from the branch: {sorted(missing)}" if missing else ""
    return Verdict(False, len(missing), truncated, torn, len(store.warnings), problem)


def seed_session(workspace: Workspace, turns: int, size: int, seed: int) -> None:
    """A finished session with ``turns`` large turns, written through the store (as a run would)."""
    store = SessionStore.create(workspace.session, str(workspace.root / "proj"), 0)
    for n in range(turns):
        store.append_message({"role": "user", "content": f"step {n}: " + text_of(size, seed + 2 * n),
                              "timestamp": n}, n)
        store.append_message({
            "role": "assistant", "content": [{"type": "text", "text": text_of(size, seed + 2 * n + 1)}],
            "api": "openai-completions", "provider": "openai", "model": "scripted",
            "usage": {"input": 1_000 * (n + 1), "output": 10, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 1_000 * (n + 1) + 10},
            "stopReason": "stop", "timestamp": n,
        }, n)
    workspace.expected = {entry["id"] for entry in store.branch()}


def summary_of(verdicts: Mapping[str, list[Verdict]]) -> dict[str, int]:
    everything = [v for group in verdicts.values() for v in group]
    return {
        "rounds": len(everything),
        "complete entries lost": sum(v.lost for v in everything),
        "sessions unopenable": sum(v.unopenable for v in everything),
        "user files truncated": sum(v.truncated for v in everything),
        "kills that tore a line": sum(v.torn for v in everything),
    }
