"""Issue 34 on Claude Sonnet 4.5 prices: what the prompt cache saves on the summary request and near the window,
pi-compact (the real ``AgentSession``, litellm's HTTP path) side by side with pi 0.73.1, on the fake Anthropic
server (its simulated cache: breakpoints, the 20-block lookback, write premium, the thinking settings part of
every message's cache identity).

- ``resume``: a text-heavy session filled to just under the threshold of a 140k window (``reserveTokens``
  16,384: 123,616), then the cache is emptied (a resume after the cache expired) and one more prompt is sent:
  the threshold compaction after that resumed turn.
- ``loop``: one prompt, a read loop of ~11k-token files past a 150k threshold (``reserveTokens`` 50,000 on the
  200k window): ``reusePrefix`` auto, always (on the prefix), never (serialized), and pi.
- ``thinking``: a read loop at ``--thinking high`` grown towards 195k on the 200k window: the thinking budgets
  sent, the share of each prompt read from the cache, the cost per request.

    .venv/bin/python benchmarks/bench_cache_cost.py                  # all three, with pi when installed
    .venv/bin/python benchmarks/bench_cache_cost.py --only thinking --no-pi
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fakes.anthropic_cache import cost  # noqa: E402
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest  # noqa: E402
from fakes.anthropic_stream import AnthropicReply, text_reply  # noqa: E402
from fakes.cost_session import GrowingSession  # noqa: E402
from fakes.pi_probe import pi_installed, run_pi  # noqa: E402

from pi_compact.agent.session import AgentSession  # noqa: E402
from pi_compact.agent.system_prompt import build_system_prompt  # noqa: E402
from pi_compact.agent.tools import default_tools  # noqa: E402
from pi_compact.clock import now_ms  # noqa: E402
from pi_compact.compaction import prompts  # noqa: E402
from pi_compact.llm.resolve import create_model, resolve_model  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402
from pi_compact.settings import CompactionSettings, RetrySettings, Settings  # noqa: E402

# Issue 34's measurements are of the compaction and the requests around it. Tool-result clearing (issue 32,
# bench_tool_clearing.py) starts at the same threshold and would clear these read loops instead, and the loops
# (which grow until a compaction) would never end.
NO_CLEARING = CompactionSettings(clear_tool_results=False)

MODEL = "anthropic/claude-sonnet-4-5"
SUMMARY = "\n".join(f"{heading}\n- the work so far" for heading in prompts.HISTORY_HEADINGS)
TURN_SUMMARY = "\n".join(f"{heading}\n- the turn so far" for heading in prompts.TURN_PREFIX_HEADINGS)
ANSWER = "lorem ipsum dolor sit amet " * 740  # ~5k tokens
READ_PROMPT = "Read part_000.txt, then each next part file, one at a time, until told to stop."


def asks_summary(body: dict[str, Any]) -> bool:
    """A summary request: serialized (the summarizer's system prompt) or on the chat prefix (its instruction)."""
    system = "".join(part.get("text", "") for part in body.get("system") or [])
    content = body["messages"][-1]["content"]
    text = "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)
    starts = (prompts.history_instruction(False, None)[:60], prompts.history_instruction(True, None)[:60],
              prompts.turn_instruction(None)[:60])
    return prompts.SYSTEM_PROMPT[:60] in system or "<conversation>" in text or text.startswith(starts)


def summary_reply(body: dict[str, Any]) -> AnthropicReply:
    content = body["messages"][-1]["content"]
    text = "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)
    turn = text.startswith(prompts.turn_instruction(None)) or prompts.TURN_PREFIX_PROMPT[:60] in text
    return text_reply(TURN_SUMMARY if turn else SUMMARY, output_tokens=600)


def row(record: RecordedRequest) -> dict[str, Any]:
    usage = record.usage or {}
    return {"prompt_tokens": record.prompt_tokens, "input": usage.get("input_tokens", 0),
            "cache_read": usage.get("cache_read_input_tokens", 0),
            "cache_write": usage.get("cache_creation_input_tokens", 0),
            "dollars": round(cost(usage), 4) if usage else None,
            "budget": (record.body.get("thinking") or {}).get("budget_tokens"),
            "error": record.error.message[:100] if record.error else None}


def new_session(server: FakeAnthropicServer, cwd: Path, settings: Settings, window: int | None,
                thinking: str | None = None, store: SessionStore | None = None,
                clock: Callable[[], int] = now_ms) -> AgentSession:
    info = resolve_model(MODEL, settings=settings, context_window=window)
    model = create_model(info, api_base=server.base_url, api_key="sk-fake", settings=settings)
    tools = default_tools()
    return AgentSession(
        store=store or SessionStore.create(cwd / "session.jsonl", str(cwd), 1_700_000_000_000), model=model,
        settings=settings, tools=tools, cwd=cwd, emit=lambda event: None, thinking=thinking, now_ms=clock,
        system_prompt=build_system_prompt(str(cwd), date(2026, 1, 1), [t.name for t in tools]),
    )


def summaries_of(records: list[RecordedRequest]) -> dict[str, Any]:
    rows = [row(r) for r in records if asks_summary(r.body)]
    return {"summary_requests": rows, "dollars": round(sum(r["dollars"] or 0 for r in rows), 4)}


# ---- (a) the threshold compaction after a resumed turn -------------------------------------------------

RESUME_WINDOW, RESUME_THRESHOLD = 140_000, 140_000 - 16_384


def talk(body: dict[str, Any]) -> AnthropicReply:
    return summary_reply(body) if asks_summary(body) else text_reply(ANSWER, output_tokens=5_000)


def resume_ours() -> dict[str, Any]:
    settings = Settings(retry=RetrySettings(enabled=False), compaction=NO_CLEARING)
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk
        cwd = Path(scratch)
        session = new_session(server, cwd, settings, RESUME_WINDOW)
        for part in range(60):
            usage = session.context_usage()
            if usage.tokens + 5_200 > usage.threshold:
                break
            session.prompt(f"Write part {part} of the essay.")
        filled = session.context_usage().tokens
        session.close()
        server.cache.clear()  # the resume comes after the cache expired
        first = len(server.records)
        resumed = new_session(server, cwd, settings, RESUME_WINDOW,
                              store=SessionStore.open(cwd / "session.jsonl", str(cwd), 1_700_000_000_000))
        resumed.prompt("Write the last part of the essay.")
        records = server.records[first:]
        details = [e["details"] for e in resumed.store.branch() if e.get("type") == "compaction"]
        resumed.close()
    return {"client": "pi-compact", "context_before_resume": filled, "resumed_turn": row(records[0]),
            "summary_way": details[-1].get("summaryRequest") if details else None, **summaries_of(records)}


def resume_pi() -> dict[str, Any]:
    settings = {"compaction": {"enabled": True, "reserveTokens": 16_384, "keepRecentTokens": 20_000}}
    overrides = {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": RESUME_WINDOW}}}
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk
        workdir = Path(scratch)
        session = workdir / "pi-session.jsonl"
        first = 0
        for part in range(60):
            context = server.records[-1].prompt_tokens + 5_000 if server.records else 0
            if context + 5_200 > RESUME_THRESHOLD:  # this prompt crosses the threshold: a resume, cache expired
                server.cache.clear()
                first = len(server.records)
            run = run_pi("anthropic", server.base_url, f"Write part {part} of the essay.", workdir, settings=settings,
                         extra_args=("--session", str(session)), timeout=300, provider_fields=overrides)
            if run.returncode != 0:
                raise SystemExit(f"pi failed: {run.stderr[-2000:]}")
            if any(asks_summary(r.body) for r in server.records):
                break
        records = server.records[first:]
    return {"client": "pi 0.73.1", "context_before_resume": records[0].prompt_tokens,
            "resumed_turn": row(records[0]), **summaries_of(records)}


# ---- (b) a read-heavy loop ------------------------------------------------------------------------------

LOOP_RESERVE, LOOP_FILE_TOKENS, LOOP_TARGET = 50_000, 11_000, 160_000


def loop_route(session: GrowingSession, asked: list[bool]) -> Callable[[dict[str, Any]], AnthropicReply]:
    def route(body: dict[str, Any]) -> AnthropicReply:
        if asks_summary(body):
            asked.append(True)
            return summary_reply(body)
        return text_reply("Stopping after the compaction.") if asked else session.route(body)

    return route


def loop_ours(reuse: str) -> dict[str, Any]:
    settings = Settings(retry=RetrySettings(enabled=False),
                        compaction=replace(NO_CLEARING, reserve_tokens=LOOP_RESERVE, reuse_prefix=reuse))
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        cwd = Path(scratch)
        server.route = loop_route(GrowingSession(cwd, LOOP_TARGET, file_tokens=LOOP_FILE_TOKENS), [])
        session = new_session(server, cwd, settings, None)
        session.prompt(READ_PROMPT)
        records = list(server.records)
        details = [e["details"] for e in session.store.branch() if e.get("type") == "compaction"]
        session.close()
    reads = sum(1 for r in records if not asks_summary(r.body)) - 1
    return {"client": f"pi-compact, reusePrefix {reuse}", "reads_before": reads,
            "summary_way": details[-1].get("summaryRequest") if details else None, **summaries_of(records)}


def loop_pi() -> dict[str, Any]:
    settings = {"compaction": {"enabled": True, "reserveTokens": LOOP_RESERVE, "keepRecentTokens": 20_000}}
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        workdir = Path(scratch)
        server.route = loop_route(GrowingSession(workdir, LOOP_TARGET, file_tokens=LOOP_FILE_TOKENS), [])
        run = run_pi("anthropic", server.base_url, READ_PROMPT, workdir, settings=settings, timeout=600,
                     extra_args=("--session", str(workdir / "pi-session.jsonl")))
        if run.returncode != 0 and not server.records:
            raise SystemExit(f"pi failed: {run.stderr[-2000:]}")
        records = list(server.records)
    reads = sum(1 for r in records if not asks_summary(r.body)) - 1
    return {"client": "pi 0.73.1", "reads_before": reads, **summaries_of(records)}


# ---- (c) --thinking high near the window ----------------------------------------------------------------


def thinking_ours() -> dict[str, Any]:
    settings = Settings(retry=RetrySettings(enabled=False), compaction=NO_CLEARING)
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        cwd = Path(scratch)
        server.route = loop_route(GrowingSession(cwd, 195_000), [])
        session = new_session(server, cwd, settings, None, thinking="high")
        session.prompt(READ_PROMPT)
        records = list(server.records)
        session.close()
    return thinking_report("pi-compact", records)


def thinking_pi() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        workdir = Path(scratch)
        server.route = loop_route(GrowingSession(workdir, 195_000), [])
        settings = {"compaction": {"enabled": True}}
        run_pi("anthropic", server.base_url, READ_PROMPT, workdir, thinking="high", settings=settings, timeout=900,
               extra_args=("--session", str(workdir / "pi-session.jsonl")))
        records = list(server.records)
    return thinking_report("pi 0.73.1", records)


def thinking_report(client: str, records: list[RecordedRequest]) -> dict[str, Any]:
    chat = [r for r in records if not asks_summary(r.body)]
    first_summary = next((i for i, r in enumerate(records) if asks_summary(r.body)), len(records))
    fill = [r for r in records[:first_summary] if r.usage]
    big = [r for r in fill if r.prompt_tokens > 60_000]
    shares = [r.usage["cache_read_input_tokens"] / r.prompt_tokens for r in big]
    return {
        "client": client, "requests": len(records), "budgets": sorted({row(r)["budget"] for r in chat} - {None}),
        "largest_prompt": max((r.prompt_tokens for r in fill), default=0),
        "min_read_share_over_60k": round(min(shares), 4) if shares else None,
        "fill_over_60k_dollars": round(sum(cost(r.usage) for r in big), 4),
        "largest_request": row(max(fill, key=lambda r: r.prompt_tokens)) if fill else None,
        "refused": [row(r) for r in records if r.error is not None],
        "summary": summaries_of(records[first_summary:]) if first_summary < len(records) else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", choices=("resume", "loop", "thinking"), action="append")
    parser.add_argument("--no-pi", action="store_true", help="only pi-compact")
    args = parser.parse_args()
    cases = args.only or ["resume", "loop", "thinking"]
    pi = not args.no_pi and pi_installed()
    results: dict[str, list[dict[str, Any]]] = {}
    if "resume" in cases:
        results["resume"] = [resume_ours(), *([resume_pi()] if pi else [])]
    if "loop" in cases:
        results["loop"] = [loop_ours("auto"), loop_ours("always"), loop_ours("never"), *([loop_pi()] if pi else [])]
    if "thinking" in cases:
        results["thinking"] = [thinking_ours(), *([thinking_pi()] if pi else [])]
    for case, rows in results.items():
        for result in rows:
            print(f"{case:<9} {result['client']:<30} " + (
                f"summary ${result['dollars']:.4f}" if "dollars" in result else
                f"budgets {result['budgets']}, min read share {result['min_read_share_over_60k']}, "
                f"fill>60k ${result['fill_over_60k_dollars']:.2f}"))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
