"""What a long tool loop costs on Claude Sonnet 4.5 prices: pi-compact's model layer vs pi 0.73.1 (issue 21).

Both grow the same scripted session (``tests/fakes/cost_session.py``: every answer a short signed thinking
block and a ``read`` of the next ~5k-token file) on the fake Anthropic server, which simulates prompt caching
from the breakpoints each client places and prices every request from its usage. Ours runs through the
product's model layer: ``resolve_model`` + ``create_model`` (``LiteLLMModel``, the real request builder,
litellm's real HTTP path), the agent's ``build_request``, system prompt and ``read`` tool, at thinking
"medium" like pi. pi runs through ``tests/fakes/pi_probe.py`` (skipped when ``node_modules`` has no pi).

    .venv/bin/python benchmarks/bench_provider_cost.py                 # 155k (pi's reach) and 183,616
    .venv/bin/python benchmarks/bench_provider_cost.py --no-pi --target 183616

Printed: per client, the request nearest 150k tokens (prompt, cache read / write, dollars), the fill cycle
from 25k to the target (requests, dollars), rejections, and whether any request was refused for
prompt + ``max_tokens`` over the window.
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

from fakes.anthropic_server import FakeAnthropicServer  # noqa: E402
from fakes.cost_session import GrowingSession, RequestCost, request_costs, run_with_pi, summary  # noqa: E402
from fakes.pi_probe import pi_installed  # noqa: E402

from pi_compact.agent.request import build_request  # noqa: E402
from pi_compact.agent.system_prompt import build_system_prompt  # noqa: E402
from pi_compact.agent.tools import ToolContext, default_tools, run_tool  # noqa: E402
from pi_compact.llm.protocol import complete  # noqa: E402
from pi_compact.llm.resolve import create_model, resolve_model  # noqa: E402
from pi_compact.settings import Settings  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-5"
THRESHOLD = 200_000 - 16_384  # pi's compaction threshold on a 200k window (reserveTokens 16,384)
PROMPT = "Read part_000.txt, then each next part file, one at a time, until told to stop."


def run_ours(target: int, thinking: str, tool_output: str = "raw") -> tuple[list[RequestCost], list[str], int]:
    """The session grown by pi-compact's model layer; (costs, rejections, assistant replies).

    ``tool_output`` "raw": the tool result is the file's text, what pi's ``read`` returns, so both clients
    send the same session bytes and only the model layer differs; "product": our ``read`` tool's output
    (numbered lines, ~8 % more tokens per file)."""
    settings = Settings()
    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        workdir = Path(scratch)
        session = GrowingSession(workdir, target)
        server.route = session.route
        info = resolve_model(MODEL, settings=settings)
        model = create_model(info, api_base=server.base_url, api_key="sk-fake", settings=settings)
        tools = default_tools()
        by_name = {tool.name: tool for tool in tools}
        system = build_system_prompt(str(workdir), date(2026, 1, 1), [tool.name for tool in tools])
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": PROMPT}],
                                           "timestamp": 0}]  # fmt: skip
        replies = 0
        for _ in range(200):
            reply = complete(model, build_request(system, messages, tools, thinking=thinking))
            messages.append(reply)
            replies += 1
            if reply["stopReason"] != "toolUse":
                break
            for block in reply["content"]:
                if block["type"] != "toolCall":
                    continue
                output = run_tool(by_name[block["name"]], block["arguments"], ToolContext(workdir))
                text = output.text
                if tool_output == "raw" and not output.is_error:
                    text = (workdir / str(block["arguments"]["path"])).read_text(encoding="utf-8")
                messages.append({"role": "toolResult", "toolCallId": block["id"], "toolName": block["name"],
                                 "content": [{"type": "text", "text": text}], "isError": output.is_error,
                                 "timestamp": 0})  # fmt: skip
        errors = [record.error.message for record in server.records if record.error is not None]
        return request_costs(server.records), errors, replies


def report(name: str, costs: list[RequestCost], errors: list[str], target: int) -> dict[str, Any]:
    result = {"client": name, "target": target, "rejections": errors, **summary(costs)}
    largest = max((c.prompt_tokens for c in costs), default=0)
    result["largest_prompt"] = largest
    result["window_refusals"] = sum("exceed context limit" in e for e in errors)
    # The fill phase's price per 1,000 tokens of context it grew, so cycles of different reach compare.
    grown = max(1, largest - 25_000)
    result["fill_dollars_per_1k_grown"] = round(result["fill_dollars"] / grown * 1000, 5)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=int, action="append", help="prompt tokens to grow to (repeatable)")
    parser.add_argument("--thinking", default="medium")
    parser.add_argument("--no-pi", action="store_true", help="only pi-compact")
    parser.add_argument("--tool-output", choices=("raw", "product"), default="raw",
                        help="raw: the file text as pi's read returns it (same bytes for both); product: our read")
    args = parser.parse_args()
    targets = args.target or [155_000, THRESHOLD]
    results = []
    for target in targets:
        costs, errors, _ = run_ours(target, args.thinking, args.tool_output)
        results.append(report(f"pi-compact ({args.tool_output})", costs, errors, target))
        if not args.no_pi and pi_installed():
            pi_costs, pi_errors = run_with_pi(target, args.thinking)
            results.append(report("pi 0.73.1", pi_costs, pi_errors, target))
    for result in results:
        near = result.get("request_near_150000") or {}
        print(f"{result['client']:<20} target {result['target']:>7,}: largest prompt {result['largest_prompt']:>7,}, "
              f"near 150k: {near.get('prompt_tokens', 0):,} tokens (read {near.get('cache_read', 0):,}, write "
              f"{near.get('cache_write', 0):,}) ${near.get('dollars', 0):.4f}; fill 25k->: {result['fill_requests']} "
              f"requests ${result['fill_dollars']:.2f} (${result['fill_dollars_per_1k_grown']:.5f} per 1k grown); "
              f"all ${result['total_dollars']:.2f}; window refusals {result['window_refusals']}")  # fmt: skip
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
