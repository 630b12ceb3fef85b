"""Token estimates, simulated prompt caching and prices for the fake Anthropic server.

A request is read as the ordered blocks the API caches in: every tool, every system part, then every
content part of every message. A block with ``cache_control`` is a breakpoint. The cache remembers the
hash of each prefix a request marked (up to and including the breakpoint's block, ``cache_control``
itself left out of the hash). A later request reads from the longest remembered prefix that ends at one
of its breakpoints or at most 20 blocks before one (the API's lookback), writes everything from there to
its last breakpoint, and pays full price for the rest. As the API: ``input_tokens`` excludes both cache
reads and writes; prefixes under ``min_tokens`` (1,024 for Sonnet) are never cached; an entry lives 5
minutes (or 1 hour with ``"ttl": "1h"``) after its last use. The thinking settings (on or off, the budget)
are part of every message block's identity: as the API documents, changing them drops the cached messages
while the tools and the system prompt stay cached. A ``compaction`` block is a block like any other: its
``content`` is its text, and with ``cache_control`` it is a breakpoint whose prefix is written and read.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .http_fake import canonical_json

LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

TokenCounter = Callable[[str], int]


def chars_over_four(text: str) -> int:
    """The default estimate: four characters a token, rounded up."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class Block:
    """One cacheable unit of a request: its identity (for the prefix hash), its text (for the token
    estimate) and its breakpoint TTL ("5m", "1h") when it carries ``cache_control``."""

    identity: str
    text: str
    ttl: str | None


def _without_cache_control(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if key != "cache_control"}


def _ttl(value: Mapping[str, Any]) -> str | None:
    control = value.get("cache_control")
    if isinstance(control, Mapping):
        return str(control.get("ttl") or "5m")
    nested = value.get("content") if value.get("type") == "tool_result" else None
    if isinstance(nested, list):  # a breakpoint inside a tool result marks the tool result's end
        return next((ttl for item in nested if isinstance(item, Mapping) and (ttl := _ttl(item))), None)
    return None


def _part_text(part: Mapping[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "thinking":
        return str(part.get("thinking", ""))
    if kind == "redacted_thinking":
        return str(part.get("data", ""))
    if kind == "compaction":  # the summary is what the model reads of it
        return str(part.get("content") or "")
    if kind == "tool_use":
        return str(part.get("name", "")) + canonical_json(part.get("input", {}))
    if kind == "tool_result":
        content = part.get("content", "")
        if isinstance(content, str):
            return content
        return "".join(_part_text(item) for item in content if isinstance(item, Mapping))
    return canonical_json(_without_cache_control(part))


def request_blocks(body: Mapping[str, Any]) -> list[Block]:
    """The request's blocks in cache order: tools, system, messages."""
    blocks: list[Block] = []
    for tool in body.get("tools") or []:
        plain = _without_cache_control(tool)
        blocks.append(Block(canonical_json({"tool": plain}), canonical_json(plain), _ttl(tool)))
    system = body.get("system")
    if isinstance(system, str):
        blocks.append(Block(canonical_json({"system": system}), system, None))
    elif isinstance(system, list):
        for part in system:
            blocks.append(Block(canonical_json({"system": _without_cache_control(part)}), _part_text(part), _ttl(part)))
    thinking = body.get("thinking")  # a change of thinking settings invalidates the messages' cache entries
    for message in body.get("messages") or []:
        role = message.get("role")
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            identity = canonical_json({"role": role, "part": _without_cache_control(part), "thinking": thinking})
            blocks.append(Block(identity, _part_text(part), _ttl(part)))
    return blocks


def estimate_tokens(body: Mapping[str, Any], counter: TokenCounter = chars_over_four) -> int:
    return sum(counter(block.text) for block in request_blocks(body))


@dataclass(frozen=True)
class CacheUsage:
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_5m: int
    cache_creation_1h: int

    @property
    def cache_creation_input_tokens(self) -> int:
        return self.cache_creation_5m + self.cache_creation_1h

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def as_usage(self) -> dict[str, Any]:
        """The ``usage`` fields of a Messages API answer (output tokens added by the caller)."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_creation_5m,
                "ephemeral_1h_input_tokens": self.cache_creation_1h,
            },
        }


def _prefix_hashes(blocks: list[Block]) -> Iterator[str]:
    digest = hashlib.sha256()
    for block in blocks:
        digest.update(block.identity.encode())
        digest.update(b"\0")
        yield digest.copy().hexdigest()


class PromptCache:
    """The prefixes written so far, with their expiry times (``clock`` is injectable for tests)."""

    def __init__(self, min_tokens: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_tokens = min_tokens
        self._clock = clock
        self._entries: dict[str, tuple[float, str]] = {}  # prefix hash -> (expires at, ttl)
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def account(self, blocks: list[Block], counter: TokenCounter = chars_over_four) -> CacheUsage:
        """Read and write the cache for one accepted request and return how its prompt was billed."""
        sizes = [counter(block.text) for block in blocks]
        totals = list(itertools.accumulate(sizes))
        hashes = list(_prefix_hashes(blocks))
        breakpoints = [i for i, block in enumerate(blocks) if block.ttl is not None]
        with self._lock:
            now = self._clock()
            self._entries = {key: entry for key, entry in self._entries.items() if entry[0] > now}
            hit = self._longest_hit(hashes, breakpoints)
            if hit >= 0:
                expires_at, ttl = self._entries[hashes[hit]]
                self._entries[hashes[hit]] = (max(expires_at, now + TTL_SECONDS.get(ttl, 300.0)), ttl)
            read = totals[hit] if hit >= 0 else 0
            written = {"5m": 0, "1h": 0}
            done = hit
            for index in breakpoints:
                if index <= done or totals[index] < self.min_tokens:
                    continue
                ttl = blocks[index].ttl or "5m"
                start = totals[done] if done >= 0 else 0
                written["1h" if ttl == "1h" else "5m"] += totals[index] - start
                self._entries[hashes[index]] = (now + TTL_SECONDS.get(ttl, 300.0), ttl)
                done = index
        total = totals[-1] if totals else 0
        return CacheUsage(total - read - written["5m"] - written["1h"], read, written["5m"], written["1h"])

    def _longest_hit(self, hashes: list[str], breakpoints: list[int]) -> int:
        best = -1
        for index in breakpoints:
            for candidate in range(index, max(-1, index - LOOKBACK_BLOCKS - 1), -1):
                if candidate > best and hashes[candidate] in self._entries:
                    best = candidate
                    break
        return best


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens; cache writes and reads as multiples of the input price."""

    input: float
    output: float
    cache_write_5m_factor: float = 1.25
    cache_write_1h_factor: float = 2.0
    cache_read_factor: float = 0.1


SONNET_4_5 = Prices(input=3.0, output=15.0)
SONNET_4_6 = Prices(input=3.0, output=15.0)
OPUS_4_6 = Prices(input=5.0, output=25.0)  # Opus 4.7 too


def cost(usage: Mapping[str, Any], prices: Prices = SONNET_4_5) -> float:
    """Dollars for one answer's Anthropic ``usage`` (creation without a 5m/1h split counts as 5m). An answer
    that compacted is billed per entry of ``usage.iterations`` (the top-level counts leave the summary out)."""
    iterations = usage.get("iterations")
    if isinstance(iterations, list) and iterations:
        return sum(_cost(iteration, prices) for iteration in iterations)
    return _cost(usage, prices)


def _cost(usage: Mapping[str, Any], prices: Prices) -> float:
    split = usage.get("cache_creation") or {}
    written_1h = int(split.get("ephemeral_1h_input_tokens") or 0)
    written_5m = int(usage.get("cache_creation_input_tokens") or 0) - written_1h
    dollars = (
        int(usage.get("input_tokens") or 0) * prices.input
        + int(usage.get("output_tokens") or 0) * prices.output
        + written_5m * prices.input * prices.cache_write_5m_factor
        + written_1h * prices.input * prices.cache_write_1h_factor
        + int(usage.get("cache_read_input_tokens") or 0) * prices.input * prices.cache_read_factor
    )
    return dollars / 1_000_000
