"""Generated sessions for ``bench_calibration.py``: real text, and usage counted by a real tokenizer.

Each session is a root-first list of v3 entries (as ``SessionStore.branch()`` gives): user prompts,
assistant replies with thinking, text and tool calls, tool results, now and then an aborted reply,
and in a third of the sessions a compaction that keeps the last turn or two. The text is cut from
files already on the machine: prose from ``/usr/share/common-licenses`` and CPython's help topics,
code from ``.py`` files of the interpreter's site-packages, JSON from litellm's bundled model-price
file (pretty-printed records, as ``gh api`` or ``curl | jq`` output).

Every reply's usage is what a provider would report: ``input`` is the system prompt (a fixed size,
not one of the messages) plus the exact token count of each message the request carries (as
``to_llm_message`` converts it; aborted replies and earlier thinking are not sent back) plus a fixed
framing cost per message; ``output`` is the count of the reply itself, thinking included. Two
tokenizers, both bundled with litellm so no network is needed:
- ``claude-like``: ``anthropic_tokenizer.json`` (Anthropic's published BPE of the Claude 1/2 era)
  + 10 tokens per message;
- ``o200k``: tiktoken's ``o200k_base`` (GPT-4o / 4.1 / 5) + 4 tokens per message.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_compact.messages import to_llm_message
from pi_compact.session.context import project_path

Count = Callable[[str], int]
LICENSES = ("GPL-3", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "LGPL-2.1", "Artistic")


@dataclass(frozen=True)
class Tokenizer:
    name: str
    count: Count
    per_message: int
    system: int  # tokens of the system prompt and tool definitions, sent with every request


def _litellm_tokenizers() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("litellm is not installed: its bundled tokenizer files are needed.")
    return Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"


def tokenizers() -> list[Tokenizer]:
    """The two "true" tokenizers, loaded from litellm's bundled files (litellm itself is not imported)."""
    folder = _litellm_tokenizers()
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    import tiktoken
    from tokenizers import Tokenizer as HfTokenizer

    claude = HfTokenizer.from_file(str(folder / "anthropic_tokenizer.json"))
    o200k = tiktoken.get_encoding("o200k_base")
    return [
        Tokenizer("claude-like", lambda text: len(claude.encode(text).ids), 10, 2200),
        Tokenizer("o200k", lambda text: len(o200k.encode(text, disallowed_special=())), 4, 1800),
    ]


@dataclass(frozen=True)
class Corpus:
    prose: list[str]
    code: list[str]
    json: list[str]


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if len(p.strip()) > 40]


def corpus(rng: random.Random) -> Corpus:
    texts = [Path("/usr/share/common-licenses", n) for n in LICENSES]
    prose = [p for path in texts if path.is_file() for p in _paragraphs(path.read_text(errors="replace"))]
    try:
        from pydoc_data.topics import topics

        prose += [p for key in sorted(topics) for p in _paragraphs(topics[key])]
    except ImportError:
        pass
    site = Path(sysconfig.get_paths()["purelib"])
    sources = sorted(p for p in site.rglob("*.py") if p.stat().st_size > 3000)
    code = [p.read_text(encoding="utf-8", errors="replace") for p in rng.sample(sources, min(300, len(sources)))]
    prices = json.loads((_litellm_tokenizers().parent.parent / "model_prices_and_context_window_backup.json")
                        .read_text(encoding="utf-8"))
    records = [json.dumps({k: v}, indent=2) for k, v in prices.items() if isinstance(v, dict)]
    return Corpus(prose, code, records)


def _size(rng: random.Random, median: int, cap: int) -> int:
    return max(40, min(cap, int(rng.lognormvariate(0, 1.0) * median)))


def _prose(rng: random.Random, c: Corpus, size: int) -> str:
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        parts.append(rng.choice(c.prose))
    return "\n\n".join(parts)[:size]


def _chunk(rng: random.Random, texts: list[str], size: int) -> str:
    text = rng.choice(texts)
    start = rng.randrange(max(1, len(text) - size))
    return text[start : start + size]


def _json(rng: random.Random, c: Corpus, size: int) -> str:
    records: list[str] = []
    while sum(map(len, records)) < size:
        records.append(rng.choice(c.json))
    return "[\n" + ",\n".join(records) + "\n]"


class _Session:
    """Entries of one session, with usage counted on what each request really carries."""

    def __init__(self, rng: random.Random, tokenizer: Tokenizer) -> None:
        self.rng = rng
        self.tok = tokenizer
        self.entries: list[dict[str, Any]] = []
        # id(message) -> (message, its wire tokens); holding the message keeps its id from being reused
        self.counts: dict[int, tuple[dict[str, Any], int]] = {}

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        entry = {"type": kind, "id": f"e{len(self.entries)}", "parentId": self.entries[-1]["id"] if self.entries
                 else None, "timestamp": "2026-01-01T00:00:00.000Z", **fields}
        self.entries.append(entry)
        return entry

    def _wire(self, message: dict[str, Any]) -> int:
        known = self.counts.get(id(message))
        if known is not None:
            return known[1]
        sent = to_llm_message(message)
        if sent is None or sent.get("stopReason") in ("aborted", "error"):
            tokens = 0  # not sent (pi's convertToLlm and ours skip them)
        else:
            tokens = self._count(sent, thinking=False) + self.tok.per_message
        self.counts[id(message)] = (message, tokens)
        return tokens

    def _count(self, message: dict[str, Any], *, thinking: bool) -> int:
        content = message.get("content")
        if isinstance(content, str):
            return self.tok.count(content)
        texts: list[str] = []
        for block in content or ():
            if block.get("type") == "text":
                texts.append(block["text"])
            elif block.get("type") == "thinking" and thinking:
                texts.append(block["thinking"])
            elif block.get("type") == "toolCall":
                texts.append(block["name"] + json.dumps(block["arguments"]))
        return sum(self.tok.count(t) for t in texts)

    def reply(self, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        """An assistant reply; its usage counts the context it answers (the entries so far)."""
        if stop == "aborted":
            usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
        else:
            context = project_path(self.entries).messages
            prompt = self.tok.system + sum(self._wire(m) for m in context)
            output = self._count({"content": content}, thinking=True)
            cached = int(prompt * self.rng.uniform(0.5, 0.95))
            usage = {"input": prompt - cached, "output": output, "cacheRead": cached, "cacheWrite": 0,
                     "totalTokens": prompt + output}
        message = {"role": "assistant", "content": content, "provider": "bench", "model": self.tok.name,
                   "usage": usage, "stopReason": stop, "timestamp": 0}
        return self.add("message", message=message)


def _tool(rng: random.Random, c: Corpus, n: int) -> tuple[dict[str, Any], str]:
    kind = rng.choices(("read", "bash", "json"), weights=(50, 30, 20))[0]
    if kind == "read":
        call = {"name": "read", "arguments": {"path": f"src/module_{n}.py"}}
        return call, _chunk(rng, c.code, _size(rng, 2500, 40_000))
    if kind == "bash":
        call = {"name": "bash", "arguments": {"command": f"pytest -q tests/test_{n}.py 2>&1 | tail -40"}}
        size = _size(rng, 800, 8000)
        text = _chunk(rng, c.code, size) if rng.random() < 0.5 else _prose(rng, c, size)
        return call, text
    call = {"name": "bash", "arguments": {"command": f"curl -s https://api.example.test/models?page={n} | jq ."}}
    return call, _json(rng, c, _size(rng, 1500, 20_000))


def generate(seed: int, tokenizer: Tokenizer, c: Corpus) -> list[dict[str, Any]]:
    """One session of 6-30 user turns (seeded)."""
    rng = random.Random(seed)
    s = _Session(rng, tokenizer)
    turns = rng.randint(6, 30)
    compact_at = rng.randint(turns // 2, turns - 2) if rng.random() < 1 / 3 else -1
    user_ids: list[str] = []
    calls = 0
    for turn in range(turns):
        if turn == compact_at:
            keep = user_ids[-rng.randint(1, 2)]
            summary = _prose(rng, c, rng.randint(1500, 6000))
            s.add("compaction", summary=summary, firstKeptEntryId=keep, tokensBefore=0)
        text = _prose(rng, c, _size(rng, 250, 3000))
        user = s.add("message", message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
        user_ids.append(user["id"])
        for _ in range(rng.choice((0, 1, 1, 2, 3, 4, 6))):
            content: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                content.append({"type": "thinking", "thinking": _prose(rng, c, _size(rng, 600, 4000))})
            if rng.random() < 0.5:
                content.append({"type": "text", "text": _prose(rng, c, _size(rng, 200, 1500))})
            if rng.random() < 0.04:
                s.reply(content + [{"type": "text", "text": "partial"}], "aborted")
                break
            results = []
            for _ in range(rng.choices((1, 2, 3), weights=(70, 20, 10))[0]):
                calls += 1
                call, output = _tool(rng, c, calls)
                content.append({"type": "toolCall", "id": f"toolu_{calls:06d}", **call})
                results.append((f"toolu_{calls:06d}", call["name"], output))
            s.reply(content, "toolUse")
            for call_id, name, output in results:
                s.add("message", message={"role": "toolResult", "toolCallId": call_id, "toolName": name,
                                          "content": [{"type": "text", "text": output}], "isError": False,
                                          "timestamp": 0})
        else:  # the turn was not aborted: it ends with an answer
            s.reply([{"type": "text", "text": _prose(rng, c, _size(rng, 500, 4000))}], "stop")
    return s.entries


__all__ = ["Corpus", "Tokenizer", "corpus", "generate", "tokenizers"]
