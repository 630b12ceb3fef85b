"""What one threshold compaction costs on Claude Sonnet 4.5 prices: pi-compact asking on the chat request's
prefix, pi-compact serialized, and pi 0.73.1 (issue 24).

The same session for all three on the fake Anthropic server (its simulated prompt cache prices every
request): prompts "Write part N of the essay." one after another, each answered with ~5k tokens of text,
until the context passes a 150k threshold (reserveTokens 50,000 on the 200k window, keepRecentTokens
20,000) and the client compacts. Text answers, not tool results: the serialized way cuts tool results to
2,000 characters, so a tool loop would hide what a serialized summary costs. Each summary request is
answered with the same scripted summary (600 output tokens). Ours runs the real ``AgentSession`` with
litellm's HTTP path; pi runs ``-p`` once per prompt on one session file.

    .venv/bin/python benchmarks/bench_compaction_cost.py            # prints a table and JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fakes.anthropic_cache import cost  # noqa: E402
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest  # noqa: E402
from fakes.anthropic_stream import AnthropicReply, text_reply  # noqa: E402
from fakes.pi_probe import pi_installed, run_pi  # noqa: E402

from pi_compact.agent.session import AgentSession  # noqa: E402
from pi_compact.agent.system_prompt import build_system_prompt  # noqa: E402
from pi_compact.agent.tools import default_tools  # noqa: E402
from pi_compact.compaction.prompts import HISTORY_HEADINGS, history_instruction  # noqa: E402
from pi_compact.llm.resolve import create_model, resolve_model  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402
from pi_compact.settings import CompactionSettings, RetrySettings, Settings  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-5"
RESERVE = 50_000
PARTS = 40
SUMMARY = "\n".join(f"{heading}\n- the essay so far" for heading in HISTORY_HEADINGS)
ANSWER = "lorem ipsum dolor sit amet " * 740  # ~5k tokens


def _is_summary(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]["content"]
    text = "".join(p.get("text", "") for p in last) if isinstance(last, list) else str(last)
    return "<conversation>" in text or text.startswith(history_instruction(False, None)[:60])


def talk(body: dict[str, Any]) -> AnthropicReply:
    """The reply policy: a long answer to every prompt, the scripted summary to a summary request."""
    if _is_summary(body):
        return text_reply(SUMMARY, output_tokens=600)
    return text_reply(ANSWER, output_tokens=5_000)


def _summary_records(server: FakeAnthropicServer) -> list[RecordedRequest]:
    return [r for r in server.records if _is_summary(r.body)]


def run_ours(reuse: str) -> list[RecordedRequest]:
    settings = Settings(retry=RetrySettings(enabled=False),
                        compaction=CompactionSettings(reserve_tokens=RESERVE, reuse_prefix=reuse))
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk
        cwd = Path(scratch)
        info = resolve_model(MODEL, settings=settings)
        model = create_model(info, api_base=server.base_url, api_key="sk-fake", settings=settings)
        tools = default_tools()
        session = AgentSession(
            store=SessionStore.create(cwd / "session.jsonl", str(cwd), 1_700_000_000_000), model=model,
            settings=settings, tools=tools, cwd=cwd, emit=lambda event: None,
            system_prompt=build_system_prompt(str(cwd), date(2026, 1, 1), [t.name for t in tools]),
        )
        for part in range(PARTS):
            session.prompt(f"Write part {part} of the essay.")
            if _summary_records(server):
                break
        return _summary_records(server)


def run_pi_talk() -> list[RecordedRequest]:
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        server.route = talk
        workdir = Path(scratch)
        session = workdir / "pi-session.jsonl"
        settings = {"compaction": {"enabled": True, "reserveTokens": RESERVE, "keepRecentTokens": 20_000}}
        for part in range(PARTS):
            run = run_pi("anthropic", server.base_url, f"Write part {part} of the essay.", workdir,
                         settings=settings, extra_args=("--session", str(session)), timeout=300)
            if run.returncode != 0:
                raise SystemExit(f"pi failed: {run.stderr[-2000:]}")
            if _summary_records(server):
                break
        return _summary_records(server)


def report(name: str, records: list[RecordedRequest]) -> dict[str, Any]:
    rows = [{"prompt_tokens": r.prompt_tokens, "input": r.usage["input_tokens"],
             "cache_read": r.usage["cache_read_input_tokens"], "cache_write": r.usage["cache_creation_input_tokens"],
             "output": r.usage["output_tokens"], "dollars": round(cost(r.usage), 4)}
            for r in records if r.usage]
    return {"client": name, "summary_requests": rows, "dollars": round(sum(row["dollars"] for row in rows), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--no-pi", action="store_true", help="only pi-compact")
    args = parser.parse_args()
    results = [report("pi-compact, on the chat prefix", run_ours("auto")),
               report("pi-compact, serialized", run_ours("never"))]
    if not args.no_pi and pi_installed():
        results.append(report("pi 0.73.1", run_pi_talk()))
    for result in results:
        parts = ", ".join(f"{row['prompt_tokens']:,} tokens (read {row['cache_read']:,}, write {row['cache_write']:,},"
                          f" input {row['input']:,}) ${row['dollars']:.4f}" for row in result["summary_requests"])
        print(f"{result['client']:<32} ${result['dollars']:.4f}: {parts}")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
