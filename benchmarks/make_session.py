"""Generate a large, realistic pi session file (JSONL v3) for the benchmarks, deterministically.

The same seed and size always give the same bytes, so timings are comparable between runs and machines.
The mix imitates a long coding session: user prompts, assistant turns with tool calls (read / bash /
edit / write), tool results with sizeable outputs, some thinking blocks, some non-ASCII text, model and
thinking-level changes, abandoned side branches with a branch summary, and a compaction every 750 KB
of entries, about where pi compacts with a 200k window (each keeping the last few turns, as pi does).

Usage: ``python benchmarks/make_session.py OUT.jsonl [--mb 100] [--seed 7]``; or ``cached_session()``
from another script, which writes into the cache directory (``$PI_COMPACT_BENCH_CACHE``, else
``<tmp>/pi-compact-bench-cache``) once and reuses the file afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Outside the checkout on purpose: 100 MB files must never end up in a commit.
CACHE_DIR = Path(os.environ.get("PI_COMPACT_BENCH_CACHE") or Path(tempfile.gettempdir()) / "pi-compact-bench-cache")
GENERATOR_VERSION = 2  # bump when the output changes, so stale cached files are not reused

_WORDS = (
    "the session file context window token budget summary compaction provider model assistant user tool "
    "result read write edit bash command output error retry branch entry parent leaf path migrate header "
    "function class module import return async await value config settings parser stream fixture test "
    "refactor lazy quick point cut keep recent reserve estimate usage cache total cost json line append "
    "flush fsync rewrite atomic legacy version identifier timestamp message content block text thinking"
).split()
_CODE_LINES = (
    "def {w}(self, {v}: int) -> None:",
    "    return self.{w}.get({v!r}, None)",
    "for {v} in range(len({w})):",
    "    if {v} is None:",
    "        raise ValueError(f\"bad {w}: {{{v}}}\")",
    "import {w}",
    "from {w} import {v}",
    "# {w} keeps the {v} around because the caller needs it later",
    "{v} = {{\"{w}\": {n}, \"{v}\": [{n}, {n}]}}",
    "export function {w}({v}: string): number {{ return {v}.length * {n}; }}",
    "  {n} | {w:<12} | {v:>10} |",
)
_NON_ASCII = ("上下文压缩", "セッション", "토큰 예산", "résumé", "naïve", "Ünïcödé", "😀", "📦", "→", "…")
_MODELS = (("anthropic", "claude-sonnet-4-5", "anthropic-messages"), ("openai", "gpt-5.1-codex", "openai-responses"))


class _Writer:
    """Builds entries with unique ids chained to a moving leaf, and tracks what the file holds."""

    def __init__(self, rng: random.Random, start_ms: int) -> None:
        self.rng = rng
        self.now = start_ms
        self.leaf: str | None = None
        self.ids: set[str] = set()

    def _id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def _iso(self) -> str:
        seconds, millis = divmod(self.now, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"

    def entry(self, kind: str, fields: dict[str, Any], parent: str | None | bool = True) -> dict[str, Any]:
        self.now += self.rng.randint(50, 4000)
        entry_id = self._id()
        parent_id = self.leaf if parent is True else (parent or None)
        result = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": self._iso(), **fields}
        self.leaf = entry_id
        return result


def _words(rng: random.Random, count: int) -> str:
    text = " ".join(rng.choices(_WORDS, k=count))
    if rng.random() < 0.05:
        text += " " + rng.choice(_NON_ASCII)
    return text


def _code(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(_CODE_LINES).format(w=rng.choice(_WORDS), v=rng.choice(_WORDS), n=rng.randint(0, 9999))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def _usage(rng: random.Random, context: int) -> dict[str, Any]:
    output = rng.randint(20, 1500)
    cache_read = max(0, context - rng.randint(0, 3000))
    fresh = context - cache_read
    cost = {"input": fresh * 3e-6, "output": output * 1.5e-5, "cacheRead": cache_read * 3e-7, "cacheWrite": 0,
            "total": fresh * 3e-6 + output * 1.5e-5 + cache_read * 3e-7}
    return {"input": fresh, "output": output, "cacheRead": cache_read, "cacheWrite": 0,
            "totalTokens": context + output, "cost": cost}


def _tool_call(rng: random.Random, files: list[str]) -> dict[str, Any]:
    name = rng.choices(("read", "bash", "edit", "write"), weights=(40, 40, 17, 3))[0]
    path = rng.choice(files)
    if name == "read":
        arguments: dict[str, Any] = {"path": path}
    elif name == "bash":
        arguments = {"command": f"grep -rn {rng.choice(_WORDS)} src | head -{rng.randint(5, 80)}"}
    elif name == "edit":
        arguments = {"path": path, "oldText": _code(rng, 120), "newText": _code(rng, 160)}
    else:
        arguments = {"path": path, "content": _code(rng, rng.randint(300, 3000))}
    return {"type": "toolCall", "id": f"toolu_{rng.getrandbits(64):016x}", "name": name, "arguments": arguments}


def _turn(w: _Writer, model: tuple[str, str, str], files: list[str], context: int) -> Iterator[dict[str, Any]]:
    rng = w.rng
    user = {"role": "user", "content": [{"type": "text", "text": _words(rng, rng.randint(5, 120))}],
            "timestamp": w.now}
    yield w.entry("message", {"message": user})
    for _ in range(rng.randint(1, 8)):
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.3:
            blocks.append({"type": "thinking", "thinking": _words(rng, rng.randint(20, 300)), "thinkingSignature": ""})
        if rng.random() < 0.5:
            blocks.append({"type": "text", "text": _words(rng, rng.randint(5, 60))})
        calls = [_tool_call(rng, files) for _ in range(rng.choices((1, 2, 3), weights=(70, 20, 10))[0])]
        blocks.extend(calls)
        context += rng.randint(200, 3000)
        assistant = {"role": "assistant", "content": blocks, "api": model[2], "provider": model[0],
                     "model": model[1], "usage": _usage(rng, context), "stopReason": "toolUse", "timestamp": w.now}
        yield w.entry("message", {"message": assistant})
        for call in calls:
            size = int(min(40_000, rng.lognormvariate(6.0, 1.0)))  # median ~400 B, long tail
            result = {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                      "content": [{"type": "text", "text": _code(rng, size)}], "isError": rng.random() < 0.05,
                      "timestamp": w.now}
            yield w.entry("message", {"message": result})
    final = {"role": "assistant", "content": [{"type": "text", "text": _words(rng, rng.randint(10, 200))}],
             "api": model[2], "provider": model[0], "model": model[1], "usage": _usage(rng, context),
             "stopReason": "stop", "timestamp": w.now}
    yield w.entry("message", {"message": final})


def generate(target_bytes: int, seed: int, compact_every: int = 750_000) -> Iterator[str]:
    """JSON lines of one session of about ``target_bytes`` bytes.

    A compaction is written whenever the entries since the previous one exceed ``compact_every`` bytes
    (about pi's threshold for a 200k window, since the context is roughly those bytes / 4); 0 means never.
    """
    rng = random.Random(seed)
    w = _Writer(rng, 1_763_681_581_544)
    files = [f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}_{i}.py" for i in range(300)]
    header = {"type": "session", "version": 3, "id": f"bench-{seed:08d}", "timestamp": w._iso(),
              "cwd": "/home/user/project"}
    yield json.dumps(header, separators=(",", ":"))
    written = 0
    model = _MODELS[0]
    since_compaction: list[str] = []  # ids of user-message entries since the last compaction
    span_bytes = 0
    while written < target_bytes:
        context = 8_000 + span_bytes // 4
        roll = rng.random()
        if roll < 0.01:
            model = rng.choice(_MODELS)
            lines = [w.entry("model_change", {"provider": model[0], "modelId": model[1]})]
        elif roll < 0.015:
            lines = [w.entry("thinking_level_change", {"thinkingLevel": rng.choice(("off", "low", "high"))})]
        elif roll < 0.02 and w.leaf is not None:
            # An abandoned side branch, then back to where it started, with a summary of it.
            fork = w.leaf
            side = list(_turn(w, model, files, context))
            summary = {"summary": _words(rng, 80), "fromId": w.leaf}
            lines = [*side, w.entry("branch_summary", summary, parent=fork)]
        else:
            lines = list(_turn(w, model, files, context))
            since_compaction.append(lines[0]["id"])
        if compact_every and span_bytes > compact_every and len(since_compaction) > 4:
            keep_from = since_compaction[-rng.randint(2, 4)]
            details = {"readFiles": sorted(rng.sample(files, 10)), "modifiedFiles": sorted(rng.sample(files, 5))}
            lines.append(w.entry("compaction", {"summary": "## Goal\n" + _words(rng, 300),
                                               "firstKeptEntryId": keep_from, "tokensBefore": context,
                                               "details": details}))
            since_compaction = []
            span_bytes = 0
        for entry in lines:
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
            size = len(line.encode("utf-8")) + 1
            written += size
            span_bytes += size
            yield line


def write_session(path: Path, megabytes: float, seed: int, compact_every_mb: float = 0.75) -> Path:
    """Write the session to ``path`` (through a temporary file, so a crash leaves no half file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".part")
    with open(temporary, "w", encoding="utf-8") as handle:
        for line in generate(int(megabytes * 1_000_000), seed, int(compact_every_mb * 1_000_000)):
            handle.write(line + "\n")
    temporary.replace(path)
    return path


def cached_session(megabytes: float = 100, seed: int = 7, compact_every_mb: float = 0.75) -> Path:
    """The generated session for these parameters, written on first use into CACHE_DIR."""
    name = f"session-v{GENERATOR_VERSION}-{megabytes:g}mb-seed{seed}-compact{compact_every_mb:g}.jsonl"
    path = CACHE_DIR / name
    return path if path.is_file() else write_session(path, megabytes, seed, compact_every_mb)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", help="output file (default: the benchmark cache)")
    parser.add_argument("--mb", type=float, default=100, help="approximate size in megabytes (default 100)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--compact-every-mb", type=float, default=0.75,
                        help="write a compaction after this many megabytes of entries; 0 = never (default 0.75)")
    args = parser.parse_args(argv)
    if args.out:
        path = write_session(args.out, args.mb, args.seed, args.compact_every_mb)
    else:
        path = cached_session(args.mb, args.seed, args.compact_every_mb)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
