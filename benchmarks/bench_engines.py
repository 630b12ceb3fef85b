"""Issue 45: a threshold compaction by each engine on Claude Sonnet 4.6 (``--context-window 200000``), the real
``AgentSession`` over litellm's HTTP path to the fake Anthropic server (its simulated prompt cache: writes at 1.25x,
reads at 0.1x; list prices $3 / $15 per million, as Sonnet 4.5), then ten more turns.

A session of ~5k-token essay answers is filled to about ``--at`` tokens (150k and 190k by default; automatic
compaction off while filling, since the window plan puts the threshold of a 200k window at 183,808 tokens at most),
then compacted with reason "threshold" (what the threshold check runs) by:

- ``provider``: ``compaction.engine`` "provider": Anthropic's ``compact_20260112`` on the cached prefix;
- ``prefix``: "local" with ``reusePrefix`` "always": our summary request on the cached prefix;
- ``serialized``: "local" with ``reusePrefix`` "never": pi's way (the history serialized into one request), as
  pi-compact sends it;
- ``pi``: pi 0.73.1 itself (``node_modules``), its own threshold compaction on the same fake (``bench_engines_pi``),
  when it is installed.

``--repeat N`` runs every way once per round, the rounds one after another (interleaved), and ends with each way's
dollars and its fastest and median wall time.

For each: the compaction's requests (prompt tokens, cache read/write, dollars), its wall time (the fake answers
at once, so this is the client's own time plus the fake's bookkeeping), the entry's engine, and the ten chat
requests after it: whether each starts with the block and what it read from the cache.

    .venv/bin/python benchmarks/bench_engines.py --repeat 3         # 150k and 190k, every way, three rounds
    .venv/bin/python benchmarks/bench_engines.py --at 150000 --only provider
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench_engines_pi import pi_installed, run_pi  # noqa: E402
from fakes.anthropic_cache import cost  # noqa: E402
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest  # noqa: E402
from fakes.anthropic_stream import AnthropicReply, Compaction, text_reply  # noqa: E402
from plan_harness import ANSWER, SUMMARY, asks_summary, fill  # noqa: E402

from pi_compact.agent.session import AgentSession  # noqa: E402
from pi_compact.agent.system_prompt import build_system_prompt  # noqa: E402
from pi_compact.agent.tools import default_tools  # noqa: E402
from pi_compact.llm.resolve import create_model, resolve_model  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402
from pi_compact.settings import CompactionSettings, RetrySettings, Settings  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-6"
WINDOW = 200_000
# The same summary text every way, about 600 tokens (the fake counts chars/4), billed as 600 output tokens.
LONG_SUMMARY = SUMMARY + "\n" + "- the essay so far, part by part, with every decision kept\n" * 40
ENGINES = {  # compaction.engine, compaction.reusePrefix
    "provider": ("provider", "always"),
    "prefix": ("local", "always"),
    "serialized": ("local", "never"),
}
AFTER = 10


def route(body: dict[str, Any]) -> AnthropicReply:
    """The summary to a summary request (as a compaction block where the request declares the edit), else ~5k
    tokens of essay."""
    edits = (body.get("context_management") or {}).get("edits") or []
    if any(edit.get("pause_after_compaction") for edit in edits):  # the engine's request (a dormant edit does not)
        return AnthropicReply(blocks=(Compaction(LONG_SUMMARY),))
    if asks_summary(body):
        return text_reply(LONG_SUMMARY, output_tokens=600)
    return text_reply(ANSWER, output_tokens=5_000)


def new_session(server: FakeAnthropicServer, cwd: Path, engine: str, reuse: str) -> AgentSession:
    settings = Settings(retry=RetrySettings(enabled=False),
                        compaction=CompactionSettings(reserve_tokens=8_000, engine=engine, reuse_prefix=reuse))
    info = resolve_model(MODEL, settings=settings, context_window=WINDOW)
    model = create_model(info, api_base=server.base_url, api_key="sk-fake", settings=settings)
    tools = default_tools()
    return AgentSession(
        store=SessionStore.create(cwd / "session.jsonl", str(cwd), 1_700_000_000_000), model=model,
        settings=settings, tools=tools, cwd=cwd, emit=lambda event: None, auto_compact=False,
        system_prompt=build_system_prompt(str(cwd), date(2026, 1, 1), [t.name for t in tools]),
    )


def row(record: RecordedRequest) -> dict[str, Any]:
    usage = record.usage or {}
    first = (record.body.get("messages") or [{}])[0]
    parts = first.get("content") if isinstance(first.get("content"), list) else []
    return {"prompt_tokens": record.prompt_tokens, "read": usage.get("cache_read_input_tokens", 0),
            "write": usage.get("cache_creation_input_tokens", 0), "input": usage.get("input_tokens", 0),
            "output": usage.get("output_tokens", 0), "dollars": round(cost(usage), 4) if usage else None,
            "block_first": bool(parts) and parts[0].get("type") == "compaction",
            "error": record.error.message[:120] if record.error else None}


def run(way: str, at: int) -> dict[str, Any]:
    engine, reuse = ENGINES[way]
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = route
        cwd = Path(scratch)
        session = new_session(server, cwd, engine, reuse)
        filled = fill(session, at)
        first = len(server.records)
        started = time.monotonic()
        session.compact(reason="threshold")
        seconds = time.monotonic() - started
        compaction = [row(r) for r in server.records[first:]]
        [entry] = [e for e in session.store.branch() if e.get("type") == "compaction"]
        after_first = len(server.records)
        for part in range(AFTER):
            session.prompt(f"Write part {1000 + part} of the essay.")
        after = [row(r) for r in server.records[after_first:]]
        session.close()
    details = entry["details"]
    return {"way": way, "at": at, "context_before": filled, "engine": details.get("engine"),
            "fallbacks": details.get("engineFallbacks"), "summary_way": details.get("summaryRequest"),
            "compaction_dollars": round(sum(r["dollars"] or 0 for r in compaction), 4),
            "compaction_seconds": round(seconds, 3), "compaction": compaction,
            "after_dollars": round(sum(r["dollars"] or 0 for r in after), 4), "after": after}


def line(result: dict[str, Any]) -> str:
    reads = [r["read"] for r in result["after"]]
    return (f"{result['at']:>7,} {result['way']:<10} engine {result['engine']:<9} "
            f"context {result['context_before']:>7,} "
            f"compaction ${result['compaction_dollars']:.4f} in {result['compaction_seconds']:.3f} s "
            f"({len(result['compaction'])} requests); next {AFTER}: ${result['after_dollars']:.4f}, "
            f"block first in {sum(r['block_first'] for r in result['after'])}, cache reads {reads}")


def summary(results: list[dict[str, Any]]) -> list[str]:
    """Per size and way: dollars (the same every run, else said) and the compaction's wall time, fastest and median."""
    rows = []
    for at in dict.fromkeys(r["at"] for r in results):
        for way in dict.fromkeys(r["way"] for r in results if r["at"] == at):
            runs = [r for r in results if r["at"] == at and r["way"] == way]
            times = sorted(r["compaction_seconds"] for r in runs)
            paid = sorted({r["compaction_dollars"] for r in runs})
            rows.append(f"{at:>7,} {way:<10} context {runs[0]['context_before']:>7,} compaction "
                        f"{'/'.join(f'${d:.4f}' for d in paid)} ({len(runs[0]['compaction'])} requests); wall "
                        f"fastest {times[0]:.3f} s, median {statistics.median(times):.3f} s of {len(times)}; "
                        f"next {AFTER} ${runs[0]['after_dollars']:.4f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--at", type=int, action="append", help="context size to compact at (repeatable)")
    parser.add_argument("--only", choices=(*ENGINES, "pi"), action="append")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, each running every way once (interleaved)")
    args = parser.parse_args()
    ways = args.only or [*ENGINES, *(["pi"] if pi_installed() else [])]
    results = []
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for _round in range(args.repeat):
        for at in args.at or [150_000, 190_000]:
            for way in ways:
                if way == "pi":  # pi's threshold half a turn (~5k tokens) below the size ours compacted at: pi
                    # compacts after the turn that ends nearest it (its own check: past window - reserveTokens)
                    ours = next((r["context_before"] for r in results if r["at"] == at and r["way"] != "pi"), at)
                    result = {**run_pi(ours - 2_600, WINDOW, route, row, asks_summary, AFTER), "at": at}
                else:
                    result = run(way, at)
                results.append(result)
                print(line(result), flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)
    print("\n".join(summary(results)))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
