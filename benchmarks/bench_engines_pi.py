"""pi 0.73.1's own threshold compaction (serialized) on the fake Anthropic server, for ``bench_engines.py``.

pi runs in RPC mode (``node_modules``, a throwaway HOME) as ``--provider anthropic --model claude-sonnet-4-6``, its
``models.json`` pointing the built-in provider at the fake (pi's anthropic-messages path, ``/v1/messages``) with
``modelOverrides`` giving the model the benchmark's 200,000-token window and an 8,000-token output cap (pi sends it
as ``max_tokens`` of every turn with thinking off; with pi's own 64,000 a turn past ~136k tokens does not fit the
window, which the fake refuses as the API does).
``--thinking off``: the fake's answers carry no thinking either way. The same essay prompts fill the session; its
threshold (``reserveTokens`` = window - ``at``; the caller puts ``at`` half a turn below the size pi-compact
compacted at) makes pi's own check compact after the first turn past it, then ten more turns run. Its compaction
is timed from ``compaction_start`` to ``compaction_end`` as the RPC events arrive (pi's process, its JSON over a
pipe, and the fake's time).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest

ROOT = Path(__file__).resolve().parent.parent
PI_CLI = ROOT / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
PI_MODEL = "claude-sonnet-4-6"
WAIT = 120.0  # seconds for one turn or compaction, at most


class PiRpc:
    """pi in RPC mode: commands on stdin, events read by a thread into a queue (with their arrival times)."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, bufsize=1)
        self.events: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.events.put((time.monotonic(), json.loads(line)))
            except json.JSONDecodeError:
                continue

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self._next += 1
        self.process.stdin.write(json.dumps({"id": f"c{self._next}", **command}) + "\n")
        self.process.stdin.flush()

    def until(self, wanted: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("pi sent no awaited event in time")
            at, event = self.events.get(timeout=left)
            if wanted(event):
                return at, event

    def close(self) -> str:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        return self.process.stderr.read() if self.process.stderr is not None else ""


def pi_installed() -> bool:
    return PI_CLI.is_file()


def run_pi(at: int, window: int, route: Callable[[dict[str, Any]], Any],
           row: Callable[[RecordedRequest], dict[str, Any]], is_summary: Callable[[dict[str, Any]], bool],
           after: int) -> dict[str, Any]:
    """pi compacting at its threshold just past ``at`` tokens, then ``after`` more turns: what each cost."""
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = route
        home = Path(scratch)
        agent = home / "agent"
        agent.mkdir()
        settings = {"quietStartup": True, "retry": {"enabled": False},
                    "compaction": {"enabled": True, "reserveTokens": window - at, "keepRecentTokens": 20_000}}
        (agent / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        overrides = {PI_MODEL: {"contextWindow": window, "maxTokens": 8_000}}
        (agent / "models.json").write_text(json.dumps(
            {"providers": {"anthropic": {"baseUrl": server.base_url, "modelOverrides": overrides}}}), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "ANTHROPIC_"))}
        env |= {"HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1",
                "ANTHROPIC_API_KEY": "sk-fake"}
        session = home / "session.jsonl"
        pi = PiRpc(["node", str(PI_CLI), "--mode", "rpc", "--session", str(session), "--provider", "anthropic",
                    "--model", PI_MODEL, "--thinking", "off", "--no-extensions", "--no-skills", "--no-context-files"],
                   home, env)
        try:
            started = ended = None
            for part in range(200):
                pi.send({"type": "prompt", "message": f"Write part {part} of the essay."})
                pi.until(lambda e: e.get("type") == "agent_end")
                last = server.records[-1].usage or {}
                size = sum(last.get(k, 0) for k in ("input_tokens", "cache_read_input_tokens",
                                                    "cache_creation_input_tokens", "output_tokens"))
                if size > at:  # pi's own check now compacts (its threshold is window - reserveTokens = at)
                    first = len(server.records)
                    started, _ = pi.until(lambda e: e.get("type") == "compaction_start")
                    ended, end = pi.until(lambda e: e.get("type") == "compaction_end")
                    break
            assert started is not None and ended is not None, "pi never compacted"
            compaction = [row(r) for r in server.records[first:]]
            after_first = len(server.records)
            for part in range(after):
                pi.send({"type": "prompt", "message": f"Write part {1000 + part} of the essay."})
                pi.until(lambda e: e.get("type") == "agent_end")
            later = [row(r) for r in server.records[after_first:]]
        finally:
            stderr = pi.close()
        entries = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()] \
            if session.is_file() else []
    compactions = [e for e in entries if e.get("type") == "compaction"]
    if not compactions:
        raise RuntimeError(f"pi wrote no compaction entry: {end} {stderr[-400:]}")
    asked = [r for r, rec in zip(compaction, server.records[first:after_first], strict=True) if is_summary(rec.body)]
    return {"way": "pi-0.73.1", "at": at, "context_before": compactions[0].get("tokensBefore"), "engine": "pi",
            "fallbacks": None, "summary_way": "serialized", "summary_requests": len(asked),
            "compaction_dollars": round(sum(r["dollars"] or 0 for r in compaction), 4),
            "compaction_seconds": round(ended - started, 3), "compaction": compaction,
            "after_dollars": round(sum(r["dollars"] or 0 for r in later), 4), "after": later}


__all__ = ["pi_installed", "run_pi"]
