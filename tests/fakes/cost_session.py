"""A scripted session that grows a tool loop's context up to a target on the fake Anthropic server, and what
each request of it costs at Claude Sonnet 4.5 prices (issue 21's comparison).

The server answers every request with a call to ``read`` on the next ~5k-token file (with a short signed
thinking block, as a thinking model answers) until the prompt reaches the target, then with a text answer.
Any client works: it only has to run its ``read`` tool in ``workdir``. The cost of each request comes from
the server's simulated prompt cache, so it shows what the client's cache breakpoints save.

    python tests/fakes/cost_session.py --target 180000      # runs pi (node_modules), prints a table + JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``fakes`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes.anthropic_cache import SONNET_4_5, Prices, cost, estimate_tokens
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest
from fakes.anthropic_stream import AnthropicReply, Text, Thinking, ToolUse

LINE = "{index:05d} " + "lorem ipsum dolor sit amet " * 3 + "\n"  # 88 characters


class GrowingSession:
    """The reply policy (``server.route = session.route``) and the files it reads."""

    def __init__(self, workdir: Path, target_tokens: int, file_tokens: int = 5000, output_tokens: int = 200) -> None:
        self.workdir = workdir
        self.target_tokens = target_tokens
        self.file_tokens = file_tokens
        self.output_tokens = output_tokens
        lines = max(1, file_tokens * 4 // len(LINE.format(index=0)))
        for number in range(target_tokens // file_tokens + 2):
            text = "".join(LINE.format(index=number * lines + i) for i in range(lines))
            (workdir / self.file_name(number)).write_text(text, encoding="utf-8")

    @staticmethod
    def file_name(number: int) -> str:
        return f"part_{number:03d}.txt"

    def route(self, body: dict[str, Any]) -> AnthropicReply:
        reads = sum(
            1
            for message in body.get("messages") or []
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "tool_use"
        )
        if estimate_tokens(body) + self.file_tokens >= self.target_tokens:
            return AnthropicReply(blocks=(Text(f"Read {reads} files."),), output_tokens=self.output_tokens)
        blocks = (Thinking(f"Next: file {reads}."), ToolUse("read", {"path": self.file_name(reads)}))
        return AnthropicReply(blocks=blocks, output_tokens=self.output_tokens)


@dataclass(frozen=True)
class RequestCost:
    prompt_tokens: int
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    dollars: float


def request_costs(records: Sequence[RecordedRequest], prices: Prices = SONNET_4_5) -> list[RequestCost]:
    out = []
    for record in records:
        usage: Mapping[str, Any] = record.usage or {}
        if record.error is not None or not usage:
            continue
        out.append(
            RequestCost(
                record.prompt_tokens,
                int(usage["input_tokens"]),
                int(usage["cache_read_input_tokens"]),
                int(usage["cache_creation_input_tokens"]),
                int(usage["output_tokens"]),
                cost(usage, prices),
            )
        )
    return out


def summary(costs: Sequence[RequestCost], fill_from: int = 25_000, at: int = 150_000) -> dict[str, Any]:
    """Totals, the fill phase from ``fill_from`` tokens on, and the request nearest ``at`` tokens."""
    fill = [c for c in costs if c.prompt_tokens >= fill_from]
    nearest = min(costs, key=lambda c: abs(c.prompt_tokens - at)) if costs else None
    return {
        "requests": len(costs),
        "total_dollars": round(sum(c.dollars for c in costs), 4),
        "fill_requests": len(fill),
        "fill_dollars": round(sum(c.dollars for c in fill), 4),
        f"request_near_{at}": asdict(nearest) if nearest else None,
    }


def run_with_pi(target: int, thinking: str) -> tuple[list[RequestCost], list[str]]:
    from fakes.pi_probe import run_pi

    with tempfile.TemporaryDirectory() as scratch, FakeAnthropicServer().start() as server:
        session = GrowingSession(Path(scratch), target)
        server.route = session.route
        settings = {"compaction": {"enabled": False}}  # the fill phase only
        prompt = "Read part_000.txt, then each next part file, one at a time, until told to stop."
        run = run_pi("anthropic", server.base_url, prompt, Path(scratch), thinking=thinking, settings=settings,
                     timeout=900)  # fmt: skip
        errors = [record.error.message for record in server.records if record.error is not None]
        if run.returncode != 0 and not errors:
            raise SystemExit(f"pi failed: {run.stderr[-2000:]}")
        return request_costs(server.records), errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=int, default=180_000, help="prompt tokens to grow to")
    parser.add_argument("--thinking", default="medium")
    args = parser.parse_args()
    costs, errors = run_with_pi(args.target, args.thinking)
    print(f"{'prompt':>8} {'input':>8} {'read':>8} {'write':>8} {'out':>5} {'$':>8}")
    for c in costs:
        print(f"{c.prompt_tokens:>8} {c.input_tokens:>8} {c.cache_read:>8} {c.cache_write:>8} "
              f"{c.output_tokens:>5} {c.dollars:>8.4f}")  # fmt: skip
    print(json.dumps({"client": "pi 0.73.1", "rejections": errors, **summary(costs)}, indent=1))


if __name__ == "__main__":
    main()
