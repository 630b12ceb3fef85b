"""Issue 43 on Claude Sonnet 4.5 prices: one window plan per session, pi-compact (the real ``AgentSession``, litellm's
HTTP path) side by side with pi 0.73.1 on the fake Anthropic server (its simulated prompt cache: writes at 1.25x,
reads at 0.1x, the cached messages dropped when the thinking settings change). Every request of the turn is counted:
the chat requests and the summary requests together. Default thinking level (medium) for both.

- ``warm``: a ~106k text session on a 130k window, the cache warm from the last turn; a ~12k-token log is pasted.
- ``cold120`` / ``cold170``: a session filled to ~120k on a 140k window (~170k on the 200k window), its cache
  expired (the session resumed later), then an ~11.5k-token log is pasted.
- ``foreign``: a session another agent wrote (pi; ours with its reply digests removed, the cache holding nothing of
  this agent's requests), resumed within five minutes and compacted (``/compact``), against the serialized way.

For each: the turn's requests (prompt tokens, cache read/write, ``max_tokens``, thinking budget, dollars), the
dollars of the turn, and every request of the whole run whose ``thinking`` or ``max_tokens`` differs from the
request before it (from the fake's request log).

    .venv/bin/python benchmarks/bench_window_plan.py                  # all four, with pi when installed
    .venv/bin/python benchmarks/bench_window_plan.py --only warm --no-pi
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench_cache_cost import new_session as cache_session  # noqa: E402
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest  # noqa: E402
from fakes.pi_probe import pi_installed, run_pi  # noqa: E402
from plan_harness import changes, dollars, fill, log_prompt, row, talk  # noqa: E402

from pi_compact.agent.session import AgentSession  # noqa: E402
from pi_compact.clock import now_ms  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402
from pi_compact.settings import CompactionSettings, RetrySettings, Settings  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-5"
CASES = {  # window, context to fill to, tokens of log pasted, the cache expired before the paste
    "warm": (130_000, 107_000, 12_000, False),
    "cold120": (140_000, 120_000, 11_500, True),
    "cold170": (200_000, 173_000, 11_500, True),  # filled to ~170k, the paste crossing the 179,616 threshold
}


def new_session(server: FakeAnthropicServer, cwd: Path, window: int, store: SessionStore | None = None,
                clock: Any = now_ms, settings: Settings | None = None) -> AgentSession:
    """``bench_cache_cost``'s session (default settings, retries off) on ``window``."""
    return cache_session(server, cwd, settings or Settings(retry=RetrySettings(enabled=False)), window,
                         store=store, clock=clock)


def report(client: str, case: str, records: list[RecordedRequest], first: int, extra: dict[str, Any]) -> dict[str, Any]:
    turn = records[first:]
    return {"client": client, "case": case, "turn": [row(r) for r in turn], "turn_dollars": round(dollars(turn), 4),
            "changes": [{"index": i, "before": before, "after": after} for i, before, after in changes(records)],
            "refused": [r.error.message[:120] for r in records if r.error is not None], **extra}


def paste_ours(case: str) -> dict[str, Any]:
    window, target, log, cold = CASES[case]
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk()
        cwd = Path(scratch)
        session = new_session(server, cwd, window)
        filled = fill(session, target)
        if cold:  # resumed ten minutes later: what the last run wrote has expired
            session.close()
            server.cache.clear()
            session = new_session(server, cwd, window, SessionStore.open(cwd / "session.jsonl", str(cwd), 0),
                                  lambda: now_ms() + 600_000)
        first = len(server.records)
        started = time.monotonic()
        session.prompt(log_prompt(log))
        seconds = time.monotonic() - started
        details = [e["details"].get("summaryRequest") for e in session.store.branch() if e.get("type") == "compaction"]
        records = list(server.records)
        session.close()
    return report("pi-compact", case, records, first, {"context_before": filled, "summary_way": details[-1:],
                                                       "turn_seconds": round(seconds, 2)})


def paste_pi(case: str) -> dict[str, Any]:
    window, target, log, cold = CASES[case]
    settings = {"compaction": {"enabled": True}}
    overrides = {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": window}}}
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk()
        workdir = Path(scratch)
        session = workdir / "pi-session.jsonl"
        refused = None  # pi asks for 40,192 output tokens whatever the prompt: near 160k the API refuses it
        for part in range(200):
            context = server.records[-1].prompt_tokens + 5_000 if server.records else 0
            if context + 5_200 > target:
                break
            run = run_pi("anthropic", server.base_url, f"Write part {part} of the essay.", workdir, settings=settings,
                         extra_args=("--session", str(session)), timeout=300, provider_fields=overrides)
            if run.returncode != 0:
                if server.records and server.records[-1].error is not None:
                    refused = server.records[-1].error.message[:160]
                    break
                raise SystemExit(f"pi failed: {run.stderr[-2000:]}")
        filled = max(r.prompt_tokens for r in server.records if r.error is None) + 5_000
        if cold:
            server.cache.clear()
        first = len(server.records)
        started = time.monotonic()
        run_pi("anthropic", server.base_url, log_prompt(log), workdir, settings=settings,
               extra_args=("--session", str(session)), timeout=600, provider_fields=overrides)
        seconds = time.monotonic() - started
        records = list(server.records)
    return report("pi 0.73.1", case, records, first, {"context_before": filled, "turn_seconds": round(seconds, 2),
                                                      "fill_refused": refused})


def foreign_ours(reuse: str) -> dict[str, Any]:
    """A session whose replies name no request of ours, resumed at once and compacted (``reusePrefix`` ``reuse``)."""
    settings = Settings(retry=RetrySettings(enabled=False), compaction=CompactionSettings(reuse_prefix=reuse))
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk()
        cwd = Path(scratch)
        writer = new_session(server, cwd, 140_000, settings=settings)
        filled = fill(writer, 120_000)
        writer.close()
        path = cwd / "session.jsonl"
        entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for entry in entries:
            entry.pop("requestDigest", None)
        path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
        server.cache.clear()  # the other agent's prefixes are not this agent's
        first = len(server.records)
        session = new_session(server, cwd, 140_000, SessionStore.open(path, str(cwd), 0), settings=settings)
        session.compact()
        details = [e["details"].get("summaryRequest") for e in session.store.branch() if e.get("type") == "compaction"]
        records = list(server.records)
        session.close()
    return report(f"pi-compact, reusePrefix {reuse}", "foreign", records, first,
                  {"context_before": filled, "summary_way": details[-1:]})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", choices=(*CASES, "foreign"), action="append")
    parser.add_argument("--no-pi", action="store_true", help="only pi-compact")
    args = parser.parse_args()
    cases = args.only or [*CASES, "foreign"]
    pi = not args.no_pi and pi_installed()
    results: list[dict[str, Any]] = []
    for case in cases:
        rows = [foreign_ours("auto"), foreign_ours("never")] if case == "foreign" else \
            [paste_ours(case), *([paste_pi(case)] if pi else [])]
        for result in rows:
            results.append(result)
            summaries = sum(1 for r in result["turn"] if r["summary"])
            print(f"{case:<8} {result['client']:<32} turn ${result['turn_dollars']:.4f} "
                  f"({len(result['turn'])} requests, {summaries} summary), changes of thinking/max_tokens: "
                  f"{len(result['changes'])}, refused: {len(result['refused'])}", flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
