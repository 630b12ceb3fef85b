"""Issue 43's sessions on the fake Anthropic server (Sonnet prices, its simulated prompt cache): a text session
filled to a size with ~5k-token answers, then one prompt with a pasted log. Shared by
``tests/agent/test_window_plan_cases.py`` (small sizes) and ``benchmarks/bench_window_plan.py`` (the issue's)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fakes.anthropic_cache import cost
from fakes.anthropic_server import RecordedRequest
from fakes.anthropic_stream import AnthropicReply, Text, Thinking, ToolUse, text_reply

from pi_compact.agent.session import AgentSession
from pi_compact.compaction import prompts

ANSWER = "lorem ipsum dolor sit amet " * 740  # ~5k tokens (the fake counts chars/4)
SUMMARY = "\n".join(f"{heading}\n- the essay so far" for heading in prompts.HISTORY_HEADINGS)
TURN_SUMMARY = "\n".join(f"{heading}\n- the turn so far" for heading in prompts.TURN_PREFIX_HEADINGS)


def _last_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)


def asks_summary(body: dict[str, Any]) -> bool:
    """A summary request: serialized (the summarizer's system prompt; pi's: the history in tags) or on the chat
    prefix (its instruction)."""
    system = "".join(part.get("text", "") for part in body.get("system") or [])
    starts = (prompts.history_instruction(False, None)[:60], prompts.history_instruction(True, None)[:60],
              prompts.turn_instruction(None)[:60])
    text = _last_text(body)  # (pi's summary request carries the history in <conversation> tags)
    return prompts.SYSTEM_PROMPT[:60] in system or "<conversation>" in text or text.startswith(starts)


def talk(answer_tokens: int = 5_000) -> Callable[[dict[str, Any]], AnthropicReply]:
    """The reply policy: the scripted summary to a summary request, a sentence to a pasted log (``log_prompt``),
    ~5k tokens of prose to anything else."""
    def route(body: dict[str, Any]) -> AnthropicReply:
        if asks_summary(body):
            text = _last_text(body)  # (the instructions share their first sentences: the whole one tells)
            turn = text.startswith(prompts.turn_instruction(None)) or prompts.TURN_PREFIX_PROMPT[:60] in text
            return text_reply(TURN_SUMMARY if turn else SUMMARY, output_tokens=600)
        if _last_text(body).startswith(LOG_PROMPT):
            return text_reply("Step 1208 failed: the cache volume was full.", output_tokens=200)
        return text_reply(ANSWER, output_tokens=answer_tokens)

    return route


LOG_PROMPT = "Here is the build log, what failed?"


def log_prompt(tokens: int) -> str:
    """The user's question with about ``tokens`` tokens of log pasted under it (answered in a sentence)."""
    return f"{LOG_PROMPT}\n\n{log_text(tokens)}"


class ReadFiles:
    """A tool loop reading ``count`` files of about ``tokens`` tokens each, one a reply (a short signed thought
    before each call, as a thinking model answers), then a short answer; summaries on request."""

    def __init__(self, workdir: Path, count: int, tokens: int = 11_000, *, linked: bool = False) -> None:
        self.count = count
        line = "{n:06d} lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod\n"
        for number in range(count):
            lines = [line.format(n=number * 100_000 + i) for i in range(tokens * 4 // len(line.format(n=0)))]
            if linked and number == 0:  # the first file indexes the others: what a later step's path finds
                lines += [f"{self.name(n)}: checksum C{n:03d}-7f3a\n" for n in range(1, count)]
            (workdir / self.name(number)).write_text("".join(lines), encoding="utf-8")

    @staticmethod
    def name(number: int) -> str:
        return f"part_{number:03d}.txt"

    def route(self, body: dict[str, Any]) -> AnthropicReply:
        if asks_summary(body):
            return talk()(body)
        # The file after the one whose result the request ends with (a compaction or a clearing step may have
        # taken the earlier calls out of the request).
        done = [int(n) for n in _CALL.findall(json.dumps(body["messages"][-1]))]
        after = max(done) + 1 if done else 0
        if after >= self.count:
            return AnthropicReply(blocks=(Text(f"Read {self.count} files."),), output_tokens=50)
        call = ToolUse("read", {"path": self.name(after)}, f"toolu_read_{after:03d}")
        return AnthropicReply(blocks=(Thinking(f"Next: file {after}."), call), output_tokens=120)


_CALL = re.compile(r"toolu_read_(\d+)")


def log_text(tokens: int) -> str:
    """A pasted build log of about ``tokens`` tokens (chars/4)."""
    line = "{n:06d} INFO worker-3 finished step {n} of the build in 12 ms, cache hit\n"
    lines, size, n = [], 0, 0
    while size < tokens * 4:
        text = line.format(n=n)
        lines.append(text)
        size += len(text)
        n += 1
    return "".join(lines)


def fill(session: AgentSession, target: int, step: int = 5_200) -> int:
    """Essay prompts until one more answer would take the context past ``target`` tokens; the size then."""
    for part in range(200):
        if session.context_usage().tokens + step > target:
            break
        session.prompt(f"Write part {part} of the essay.")
    return session.context_usage().tokens


def settings_of(record: RecordedRequest) -> tuple[Any, Any]:
    """What a request asks besides its messages that the prompt cache depends on, and its output cap."""
    return (record.body.get("thinking"), record.body.get("max_tokens"))


def changes(records: Sequence[RecordedRequest]) -> list[tuple[int, tuple[Any, Any], tuple[Any, Any]]]:
    """Every request whose ``thinking`` or ``max_tokens`` differs from the request before it (any request:
    chat or summary): (its index, the settings before, its settings)."""
    return [(i, settings_of(records[i - 1]), settings_of(records[i])) for i in range(1, len(records))
            if settings_of(records[i]) != settings_of(records[i - 1])]


def dollars(records: Sequence[RecordedRequest]) -> float:
    """What the requests cost at Sonnet 4.5 prices (cache writes at 1.25x, reads at 0.1x the input price)."""
    return sum(cost(r.usage) for r in records if r.usage)


def row(record: RecordedRequest) -> dict[str, Any]:
    """One request as the benchmark prints it."""
    usage = record.usage or {}
    return {"summary": asks_summary(record.body), "prompt_tokens": record.prompt_tokens,
            "read": usage.get("cache_read_input_tokens", 0), "write": usage.get("cache_creation_input_tokens", 0),
            "input": usage.get("input_tokens", 0), "max_tokens": record.body.get("max_tokens"),
            "budget": (record.body.get("thinking") or {}).get("budget_tokens"),
            "dollars": round(cost(usage), 4) if usage else None,
            "error": record.error.message[:120] if record.error else None}
