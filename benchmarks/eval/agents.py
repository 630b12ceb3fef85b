"""The two agents, each driven through its own command line in a subprocess, in a scratch home.

``Agent.compact(session)`` compacts the session file in place and returns the wall seconds and the
process's output: pi-compact with ``pi-compact compact FILE``, pi with RPC ``{"type": "compact"}``
(timed from the command to its response, so Node's start-up is not counted). ``Agent.ask(session,
question)`` runs one prompt in print mode on that session file and returns the printed answer.
Both get the same settings file (reserve 4,096, keep 1,500, chars/4, no retries) in a temporary
``PI_CODING_AGENT_DIR`` under a temporary ``HOME``, so nothing of the real user's setup is read or
touched, and both reach the model only through the recording proxy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from targets import ROOT, Target

API_KEY = "sk-eval"
# Said after every probe question, to both agents: the scratch project is empty, and a small model
# otherwise spends its turn running commands there instead of answering.
PROBE_SUFFIX = "Answer from this session's history; do not run commands or read files."
# ``ours-prefix`` / ``ours-serialized`` (issue 24): one chat turn first, then the compaction in the same process
# (``turn_then_compact.py``), so a summary can be asked on the prefix the server holds; the same question
# for both, and the compaction alone is timed.
WARM_QUESTION = "Before we go on: in one sentence, what are we working on right now?"
REUSE_MODES = {"ours-prefix": "always", "ours-serialized": "never"}
# ``ours-base``: pi-compact from another checkout (``--baseline-root``), compaction only, timed between the
# other agents on each transcript so "no slower than before" is measured under the same load.
BASELINE = "ours-base"
# ``ours-reads`` / ``ours-reads-off`` (issue 32): instead of ``compact FILE``, a live loop of file reads on the
# transcript's session (``read_loop.py``) with tool-result clearing on / off; then the same probes.
READ_LOOPS = {"ours-reads": True, "ours-reads-off": False}
READ_LOOP_FILES = 12  # --read-loop-files
# ``ours-floor`` / ``pi-floor`` (issue 41): the agent's own code with a summarizer that writes nothing (the
# proxy answers every summary request with empty sections, ``proxy.FLOOR_SUMMARY``): what code alone keeps.
FLOORS = {"ours-floor": "ours", "pi-floor": "pi"}
READ_DRIVER = Path(__file__).resolve().parent / "read_loop.py"
DRIVER = Path(__file__).resolve().parent / "turn_then_compact.py"
PI_CLI = ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
SETTINGS: dict[str, Any] = {
    "compaction": {"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 1500, "tokenEstimator": "chars4"},
    "retry": {"enabled": False, "provider": {"timeoutMs": 3_600_000, "idleTimeoutMs": 3_600_000}},
    "quietStartup": True,
}


@dataclass(frozen=True)
class Ran:
    """One finished command: exit code, wall seconds, what it printed."""

    code: int
    seconds: float
    stdout: str
    stderr: str


def pi_cli(explicit: str | None = None) -> Path | None:
    """pi's cli.js (``--pi-cli``, ``$PI_CLI``, or this checkout's node_modules), or None."""
    candidate = Path(explicit or os.environ.get("PI_CLI") or PI_CLI)
    return candidate if candidate.is_file() else None


def prepare_session(source: Path, dest: Path, cwd: Path) -> Path:
    """Copy ``source`` to ``dest`` with the header's cwd set to ``cwd`` (pi refuses a missing cwd)."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header["cwd"] = str(cwd)
    dest.write_text(json.dumps(header, separators=(",", ":")) + "\n" + "".join(lines[1:]), encoding="utf-8")
    return dest


def line_count(session: Path) -> int:
    return len(session.read_text(encoding="utf-8").splitlines())


def tool_calls_after(session: Path, lines: int) -> int:
    """Tool calls the assistant made in the entries written after the first ``lines`` lines: what an
    answer cost (both agents append the print-mode turn to the session they were given)."""
    calls = 0
    for line in session.read_text(encoding="utf-8").splitlines()[lines:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        blocks = message.get("content")
        if isinstance(blocks, list):
            calls += sum(1 for block in blocks if isinstance(block, dict) and block.get("type") == "toolCall")
    return calls


def last_compaction(session: Path) -> dict[str, Any] | None:
    entries = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines() if line.strip()]
    found = [e for e in entries if e.get("type") == "compaction"]
    return found[-1] if found else None


class Agent:
    """One agent (``ours`` or ``pi``) set up in ``scratch`` for ``target`` behind ``proxy_url``."""

    def __init__(self, name: str, scratch: Path, target: Target, proxy_url: str, timeout_s: float,
                 pi: Path | None = None, root: Path = ROOT) -> None:
        self.label = name  # as the tables name it; ``name`` is the agent it runs (a floor runs its agent)
        name = FLOORS.get(name, name)
        self.name, self.target, self.timeout_s = name, target, timeout_s
        self.probe_timeout_s = timeout_s
        self.read_loop_files = READ_LOOP_FILES
        home = scratch / "home"
        agent_dir = home / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        # The agents' working directory is outside any checkout: a model may run tools (bash, edit) in it.
        self.project = Path(tempfile.mkdtemp(prefix=f"pi-eval-{name}-"))
        settings = json.loads(json.dumps(SETTINGS))
        if name in REUSE_MODES:
            settings["compaction"]["reusePrefix"] = REUSE_MODES[name]
        if name in READ_LOOPS:
            settings["compaction"]["clearToolResults"] = {"enabled": READ_LOOPS[name]}
        if name.startswith("ours"):
            settings["models"] = {target.ours: {"contextWindow": target.window, "maxTokens": target.max_tokens}}
        self.settings_file = agent_dir / "settings.json"
        self.settings_file.write_text(json.dumps(settings, indent=1), encoding="utf-8")
        keep = {k: v for k, v in os.environ.items()
                if not k.startswith(("PI_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "PYTHON", "XDG_"))
                and not k.endswith(("_API_KEY", "_TOKEN"))}
        self.env = {**keep, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent_dir)}
        if name.startswith("ours"):
            self.env |= {"PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1",
                         "PI_COMPACT_CACHE_DIR": str(home / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                         "LITELLM_OFFLINE_MODE": "true"}
            self.base = [sys.executable, "-m", "pi_compact"]
            self.model_flags = ["--model", target.ours, "--api-base", proxy_url, "--api-key", API_KEY,
                                "--context-window", str(target.window)]
        else:
            assert pi is not None, "pi's cli.js is needed for the pi agent"
            models = {"providers": {"eval": {
                "baseUrl": proxy_url, "api": "openai-completions", "apiKey": API_KEY,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": target.model_id, "contextWindow": target.window, "maxTokens": target.max_tokens}]}}}
            (agent_dir / "models.json").write_text(json.dumps(models, indent=1), encoding="utf-8")
            self.env |= {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
            self.base = ["node", str(pi), "--provider", "eval", "--model", target.model_id,
                         "--no-extensions", "--no-skills", "--no-context-files"]
            self.model_flags = []

    def auto_recall(self, on: bool) -> None:
        """Turn pi-compact's automatic recall on (its default budget) or off for the next questions."""
        settings = json.loads(self.settings_file.read_text(encoding="utf-8"))
        if on:
            settings["compaction"].pop("autoRecallTokens", None)
        else:
            settings["compaction"]["autoRecallTokens"] = 0
        self.settings_file.write_text(json.dumps(settings, indent=1), encoding="utf-8")

    def close(self) -> None:
        shutil.rmtree(self.project, ignore_errors=True)

    def _run(self, args: list[str], timeout_s: float | None = None) -> Ran:
        """Run to the end, or until the timeout: then the process group is killed and the run is
        reported with exit code -9 and whatever it printed (a looping model must not stop the eval)."""
        timeout_s = timeout_s or self.timeout_s
        began = time.monotonic()
        child = subprocess.Popen(args, cwd=self.project, env=self.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            out, err = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            err += f"\n[eval: killed after {timeout_s:.0f} s]"
            return Ran(-9, time.monotonic() - began, out, err)
        return Ran(child.returncode, time.monotonic() - began, out, err)

    def compact(self, session: Path) -> Ran:
        if self.name in REUSE_MODES:
            return self._turn_then_compact(session)
        if self.name in READ_LOOPS:
            return self._run([sys.executable, str(READ_DRIVER), str(session), "--files", str(self.read_loop_files),
                              *self.model_flags])
        if self.name in ("ours", BASELINE):
            return self._run([*self.base, "compact", str(session), *self.model_flags])
        return self._rpc_compact(session)

    def _turn_then_compact(self, session: Path) -> Ran:
        """The warm-up turn and the compaction; the seconds are the compaction's alone (the driver's clock)."""
        ran = self._run([sys.executable, str(DRIVER), str(session), f"{WARM_QUESTION} {PROBE_SUFFIX}",
                         *self.model_flags])
        try:
            report = json.loads(ran.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return ran
        return Ran(ran.code, float(report["compact_s"]), ran.stdout, ran.stderr)

    def ask(self, session: Path, question: str) -> Ran:
        question = f"{question} {PROBE_SUFFIX}"
        if self.name.startswith("ours"):
            return self._run([*self.base, *self.model_flags, "--session", str(session), "-p", question],
                             self.probe_timeout_s)
        return self._run([*self.base, "--session", str(session), "-p", question], self.probe_timeout_s)

    def _rpc_compact(self, session: Path) -> Ran:
        """pi in RPC mode: one ``compact`` command; the clock runs from sending it to its response."""
        child = subprocess.Popen([*self.base, "--mode", "rpc", "--session", str(session)], cwd=self.project,
                                 env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdin is not None and child.stdout is not None
        watchdog = threading.Timer(self.timeout_s, child.kill)  # a hung pi must not hang the harness
        watchdog.start()
        began = time.monotonic()
        child.stdin.write(json.dumps({"id": "eval-compact", "type": "compact"}) + "\n")
        child.stdin.flush()
        lines, code = [], 1
        for line in child.stdout:
            lines.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "response" and event.get("id") == "eval-compact":
                code = 0 if event.get("success") else 1
                break
        seconds = time.monotonic() - began
        watchdog.cancel()
        try:
            rest, err = child.communicate(timeout=60)  # closes stdin: pi then exits
        except subprocess.TimeoutExpired:
            child.kill()
            rest, err = child.communicate()
        return Ran(code, seconds, "".join(lines) + rest, err)
