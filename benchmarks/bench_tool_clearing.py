"""Tool-result clearing on a tool-heavy task: compactions and dollars with ``clearToolResults`` on and off (issue 32).

A scripted Claude reads N files of ~12k tokens each, one per reply, in one prompt's tool loop (200k window,
Sonnet 4.5 prices), through the whole product: an ``AgentSession`` with its real ``read`` tool, clearing and
compaction, on the real model layer (``resolve_model`` + ``create_model``: ``LiteLLMModel`` and its request
builder) against the fake Anthropic server, which simulates the prompt cache from the client's breakpoints and
bills cache writes at 1.25x and reads at 0.1x the input price. Summary requests (compactions) are answered
with a structured summary and billed like any other request.

    .venv/bin/python benchmarks/bench_tool_clearing.py              # N = 20, 40, 80
    .venv/bin/python benchmarks/bench_tool_clearing.py --files 40
    .venv/bin/python benchmarks/bench_tool_clearing.py --files 30 --window 16384 --lines 60   # a 16k window
    .venv/bin/python benchmarks/bench_tool_clearing.py --files 40 --thinking medium   # issue 43: budgets kept

Printed per N and setting: agent requests, compactions, clearing steps, the largest prompt, total dollars
(every request, summaries included) and whether every tool result in the session file is whole (the text
the ``read`` tool gives for that file, word for word).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fakes.anthropic_server import FakeAnthropicServer  # noqa: E402
from fakes.anthropic_stream import AnthropicReply, Text, Thinking, ToolUse  # noqa: E402
from fakes.cost_session import request_costs  # noqa: E402

from pi_compact.agent.events import CompactionStart, Notice, SessionEvent  # noqa: E402
from pi_compact.agent.session import AgentSession  # noqa: E402
from pi_compact.agent.system_prompt import build_system_prompt  # noqa: E402
from pi_compact.agent.tools import ToolContext, default_tools, run_tool  # noqa: E402
from pi_compact.compaction.prompts import HISTORY_HEADINGS  # noqa: E402
from pi_compact.llm.resolve import create_model, resolve_model  # noqa: E402
from pi_compact.session.store import SessionStore  # noqa: E402
from pi_compact.settings import Settings  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-5"
LINE = "{index:05d} " + "lorem ipsum dolor sit amet " * 3 + "\n"  # 88 characters
LINES_PER_FILE = 500  # with the read tool's line numbers: ~47.5k characters, ~12k tokens
SUMMARY = "\n".join(f"{heading}\n- read the part files in order; nothing else decided" for heading in HISTORY_HEADINGS)
_CALL = re.compile(r"toolu_read_(\d+)")


def file_name(number: int) -> str:
    return f"part_{number:03d}.txt"


class ReadLoop:
    """The reply policy: read the next file until ``files`` are read, then answer; summaries on request."""

    def __init__(self, workdir: Path, files: int, lines: int = LINES_PER_FILE) -> None:
        self.files = files
        self.summaries = 0
        for number in range(files):
            text = "".join(LINE.format(index=number * lines + i) for i in range(lines))
            (workdir / file_name(number)).write_text(text, encoding="utf-8")

    def route(self, body: dict[str, Any]) -> AnthropicReply:
        text = json.dumps(body, ensure_ascii=False)
        if "You condense conversations" in text[:4000] or "Stop working on the task now" in text[-20000:]:
            self.summaries += 1
            return AnthropicReply(blocks=(Text(SUMMARY),))
        last = body["messages"][-1]
        done = [int(m) for m in _CALL.findall(json.dumps(last))]
        after = max(done) + 1 if done else 0
        if after >= self.files:
            return AnthropicReply(blocks=(Text(f"Read {self.files} files."),), output_tokens=50)
        call = ToolUse("read", {"path": file_name(after)}, f"toolu_read_{after:03d}")
        # With thinking on, a reply that calls a tool starts with its (signed) thinking, as Claude's do.
        thought = (Thinking(f"Next: file {after}."),) if (body.get("thinking") or {}).get("type") == "enabled" else ()
        return AnthropicReply(blocks=(*thought, call), output_tokens=60)


def results_whole(path: Path, workdir: Path) -> bool:
    """Every tool result in the session file is the text ``read`` gives for its file, word for word."""
    read = next(t for t in default_tools() if t.name == "read")
    found = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        message = json.loads(line).get("message") or {}
        if message.get("role") != "toolResult":
            continue
        number = int(_CALL.findall(message["toolCallId"])[0])
        expected = run_tool(read, {"path": file_name(number)}, ToolContext(workdir)).text
        if "".join(b.get("text", "") for b in message["content"]) != expected:
            return False
        found += 1
    return found > 0


def run(files: int, clearing: bool, window: int | None = None, lines: int = LINES_PER_FILE,
        thinking: str = "off") -> dict[str, Any]:
    base = Settings()
    settings = replace(base, compaction=replace(base.compaction, clear_tool_results=clearing))
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        workdir = Path(scratch)
        loop = ReadLoop(workdir, files, lines)
        server.route = loop.route
        info = resolve_model(MODEL, settings=settings, context_window=window)
        model = create_model(info, api_base=server.base_url, api_key="sk-fake", settings=settings)
        tools = default_tools()
        events: list[SessionEvent] = []
        path = workdir / "session.jsonl"
        system = build_system_prompt(str(workdir), date(2026, 1, 1), [t.name for t in tools])
        session = AgentSession(store=SessionStore.create(path, str(workdir), 1_700_000_000_000), model=model,
                               settings=settings, tools=tools, cwd=workdir, emit=events.append,
                               system_prompt=system, thinking=thinking)
        session.prompt(f"Read {file_name(0)}, then each next part file, one at a time, until told to stop.")
        session.close()
        costs = request_costs(server.records)
        return {
            "files": files, "clearing": clearing, "window": info.context_window,
            "requests": len(costs), "summaries": loop.summaries,
            "compactions": sum(isinstance(e, CompactionStart) for e in events),
            "clearing_steps": sum(isinstance(e, Notice) and e.text.startswith("Cleared ") for e in events),
            "largest_prompt": max((c.prompt_tokens for c in costs), default=0),
            "cache_write": sum(c.cache_write for c in costs), "cache_read": sum(c.cache_read for c in costs),
            "dollars": round(sum(c.dollars for c in costs), 4),
            "results_whole": results_whole(path, workdir),
            "rejections": [r.error.message for r in server.records if r.error is not None],
            # The thinking budgets and caps sent, and the requests that changed them against the one before.
            "budgets": sorted({(r.body.get("thinking") or {}).get("budget_tokens", 0) for r in server.records}),
            "max_tokens": sorted({r.body.get("max_tokens", 0) for r in server.records}),
            "changes": sum(1 for before, after in zip(server.records, server.records[1:], strict=False)
                           if (before.body.get("thinking"), before.body.get("max_tokens"))
                           != (after.body.get("thinking"), after.body.get("max_tokens"))),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, action="append", help="files to read (repeatable; default 20 40 80)")
    parser.add_argument("--window", type=int, help="the context window (default: the model's, 200k)")
    parser.add_argument("--lines", type=int, default=LINES_PER_FILE, help="lines per file (88 characters each)")
    parser.add_argument("--thinking", default="off", help="the session's thinking level (issue 43: medium)")
    args = parser.parse_args()
    rows = []
    for files in args.files or [20, 40, 80]:
        for clearing in (False, True):
            row = run(files, clearing, args.window, args.lines, args.thinking)
            rows.append(row)
            print(f"N={files:<3} clearing {'on ' if clearing else 'off'}: {row['requests']} requests, "
                  f"{row['compactions']} compactions, {row['clearing_steps']} clearing steps, largest prompt "
                  f"{row['largest_prompt']:,}, ${row['dollars']:.2f}, results whole: {row['results_whole']}, "
                  f"budgets {row['budgets']}, max_tokens {row['max_tokens']}, changes {row['changes']}", flush=True)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
