"""Helpers of ``bench_vs_pi.py``: the probing server, the two tools' command lines and homes, one run.

- ``ProbeServer`` is the tests' scripted OpenAI-compatible server; at the arrival of each request (its
  body fully read) it reads the watched client's CPU time (user + system of all its threads, plus its
  reaped children, from ``/proc/PID/stat``) and its peak RSS so far (``VmHWM``). It keeps no request
  bodies (the 6 MB loop would hold gigabytes), only the size of the first one.
- ``Tool`` knows how to run pi-compact or pi 0.73.1 (Node) against that server, each with its own
  temporary agent directory and HOME, so nothing of the real user's setup leaks in.
- ``run_one`` runs one child process to the end under ``/usr/bin/time`` and returns its whole-process
  CPU (``os.wait4``: the tool and its reaped children, plus ~1 ms of ``time`` itself) and peak RSS
  (``time``'s ``%M``), together with the probes taken while it ran. Why ``time``: a child's
  ``ru_maxrss`` counts the memory it had before ``exec``, i.e. a copy of the forking process; forked
  straight from this harness (~100 MB after the 6 MB loop) small tools looked as big as the harness.
  ``time`` is small, so what it forks adds about 1 MB at most.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))
from make_session import CACHE_DIR  # noqa: E402
from scripted_server import Reply, ScriptedServer  # noqa: E402

PI_CLI = ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
OURS_CLI = ROOT / ".venv" / "bin" / "pi-compact"
MODEL = "fake-model"
API_KEY = "sk-fake"
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Probe:
    """The client as a request arrived: seconds since the run started, CPU seconds, peak RSS in MB."""

    at_s: float
    cpu_s: float
    hwm_mb: float


@dataclass(frozen=True)
class Sample:
    """One finished run: whole-process CPU seconds and peak RSS (MB), wall seconds, the probes."""

    cpu_s: float
    rss_mb: float
    wall_s: float
    probes: tuple[Probe, ...]
    stdout: str


def proc_cpu_s(pid: int) -> float:
    """utime + stime (+ cutime + cstime of reaped children) of a live process, in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # the command name may contain spaces and parentheses
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICKS


def proc_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


class ProbeServer(ScriptedServer):
    """The scripted server, probing the watched client process at each request's arrival."""

    def __init__(self) -> None:
        super().__init__()
        self.pid = 0  # the ``time`` process; the tool is its child
        self.tool_pid = 0
        self.started = 0.0
        self.probes: list[Probe] = []
        self.first_request_bytes = 0

    def watch(self, pid: int, started: float, replies: Sequence[Reply]) -> None:
        with self._lock:
            self.pid, self.tool_pid, self.started, self.probes, self.first_request_bytes = pid, 0, started, [], 0
            self._queue = list(replies)

    def _record_and_next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        now = time.perf_counter()
        try:
            if not self.tool_pid:
                self.tool_pid = int(Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()[0])
            probe = Probe(now - self.started, proc_cpu_s(self.tool_pid), proc_hwm_mb(self.tool_pid))
        except (OSError, IndexError):  # the client is gone (it cannot be: it waits for this answer)
            probe = Probe(now - self.started, float("nan"), float("nan"))
        with self._lock:
            self.probes.append(probe)
            if len(self.probes) == 1:
                self.first_request_bytes = len(json.dumps(body.get("messages", [])))
        return super()._record_and_next({}, {})


@dataclass(frozen=True)
class Tool:
    """One of the two command-line agents, set up in its own scratch home for one server."""

    name: str  # "ours" or "pi"
    base: tuple[str, ...]  # the command, before any arguments
    env: dict[str, str]

    def prompt(self, text: str, session: Path | None) -> list[str]:
        where = ["--session", str(session)] if session else ["--no-session"]
        return [*self.base, *where, "-p", text]

    def compact(self, session: Path) -> list[str]:
        if self.name == "ours":
            return [*self.base[:1], "compact", str(session), *self.base[1:]]
        return [*self.base, "--mode", "rpc", "--session", str(session)]


def _settings(compaction: bool) -> dict[str, Any]:
    return {"compaction": {"enabled": compaction, "tokenEstimator": "chars4"}, "retry": {"enabled": False}}


def make_tools(server: ProbeServer, scratch: Path, window: int, compaction: bool, bytecode: str) -> list[Tool]:
    """pi-compact and pi, each with a fresh agent directory + HOME under ``scratch`` (same settings)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "OPENAI_", "ANTHROPIC_", "PYTHON"))}
    tools = []
    for name in ("ours", "pi"):
        home = scratch / f"home-{name}"
        agent = home / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        settings = _settings(compaction) | ({"quietStartup": True} if name == "pi" else {})
        (agent / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        env = {**clean, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent)}
        if name == "pi":
            models = {"providers": {"fake": {
                "baseUrl": server.base_url, "api": "openai-completions", "apiKey": API_KEY,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": MODEL, "contextWindow": window, "maxTokens": 16384}]}}}
            (agent / "models.json").write_text(json.dumps(models), encoding="utf-8")
            env |= {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
            base: tuple[str, ...] = ("node", str(PI_CLI), "--provider", "fake", "--model", MODEL,
                                     "--no-extensions", "--no-skills", "--no-context-files")
        else:
            env |= bytecode_env(bytecode)
            base = (str(OURS_CLI), "--model", f"openai/{MODEL}", "--api-base", server.base_url,
                    "--api-key", API_KEY, "--context-window", str(window))
        tools.append(Tool(name, base, env))
    return tools


def bytecode_env(mode: str) -> dict[str, str]:
    """"cached": .pyc files written to and reused from a cache outside the checkout (an installed
    pi-compact); "none": PYTHONDONTWRITEBYTECODE=1 (pi_compact compiled at every start, as in the dev shell)."""
    if mode == "none":
        return {"PYTHONDONTWRITEBYTECODE": "1"}
    return {"PYTHONPYCACHEPREFIX": str(CACHE_DIR / f"pycache-{sys.version_info[0]}{sys.version_info[1]}")}


def copy_session(source: Path, dest: Path, cwd: Path) -> Path:
    """A copy of ``source`` whose header names ``cwd`` (pi refuses a session whose cwd does not exist)."""
    with open(source, "rb") as src, open(dest, "wb") as out:
        header = json.loads(src.readline())
        header["cwd"] = str(cwd)
        out.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        shutil.copyfileobj(src, out, 1 << 20)
    return dest


def run_one(
    tool: Tool, command: list[str], cwd: Path, server: ProbeServer, replies: Sequence[Reply],
    rpc: str | None = None, timeout_s: float = 900.0,
) -> Sample:
    """Run ``command`` once to the end; ``rpc``: a JSON command whose response (same id) ends stdin."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as timed:
        started = time.perf_counter()
        child = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", timed.name, *command], cwd=cwd,
                                 env=tool.env, stdout=subprocess.PIPE if rpc else out, stderr=err,
                                 stdin=subprocess.PIPE if rpc else subprocess.DEVNULL, start_new_session=True)
        server.watch(child.pid, started, replies)
        if rpc is not None:
            _drive_rpc(child, rpc, out, started + timeout_s)
        while (waited := os.wait4(child.pid, os.WNOHANG))[0] == 0:
            if time.perf_counter() > started + timeout_s:
                os.killpg(child.pid, 9)  # the tool too, not only ``time``
            time.sleep(0.005)
        _, status, usage = waited
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        if child.returncode != 0:
            raise SystemExit(f"{tool.name} failed ({child.returncode}): {' '.join(command)}\n"
                             f"{err.read().decode(errors='replace')[-3000:]}")
        peak_kb = int(timed.read().split()[-1])
    with server._lock:
        probes = tuple(server.probes)
    return Sample(usage.ru_utime + usage.ru_stime, peak_kb / 1024, wall, probes, stdout)


def _drive_rpc(child: subprocess.Popen[bytes], command: str, out: Any, deadline: float) -> None:
    """Send one RPC command, copy stdout to ``out`` until its response arrives, then close stdin."""
    assert child.stdin is not None and child.stdout is not None
    wanted = json.loads(command)["id"]
    child.stdin.write(command.encode() + b"\n")
    child.stdin.flush()
    for line in child.stdout:
        out.write(line)
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "response" and event.get("id") == wanted:
            break
        if time.perf_counter() > deadline:
            break
    child.stdin.close()
    out.write(child.stdout.read())
