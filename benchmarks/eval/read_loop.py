"""A loop of file reads on a session, live, through the product's own wiring: the run issue 32's
"clearing below compaction" is measured on.

The harness's ``ours-reads`` (tool-result clearing on) and ``ours-reads-off`` (off) agents run this on
a transcript's session: it writes ``--files`` source files of about ``--tokens`` tokens each into the
working directory, then asks one prompt per file ("Read PATH, then reply with one sentence on what it
is for and do nothing else"), each a full turn (the read, then the answer; the reads the model really
made are counted) with the threshold checks of a live session between them, as the REPL would run them.
Compactions and clearings happen where the settings make them.
Printed at the end, one JSON line: turns, reads made, compactions and clearings added, seconds.

    python benchmarks/eval/read_loop.py SESSION --files 12 --model M --api-base URL --api-key K \
        --context-window N
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from pi_compact.agent.events import CompactionEnd, CompactionStart, ToolExecutionStart
from pi_compact.cli.choices import load_settings
from pi_compact.cli.wiring import build_runtime
from pi_compact.compaction.clearing import CLEARED_TYPE
from pi_compact.options import AppOptions

# Worded as the embedded model follows it (measured on short-python): asked "Read X and say..." on a long
# transcript it answered from the file's name, asked "Use the read tool to open X, then say..." it never
# called read in 14 turns, and asked "Read X" alone it read, then edited and read other files on its own.
PROMPT = "Read {path}, then reply with one sentence on what it is for and do nothing else."
_WORDS = ("ledger", "invoice", "lease", "token", "batch", "queue", "retry", "window", "shard", "cursor")


def module_text(index: int, tokens: int) -> str:
    """A plausible source file of about ``tokens`` tokens (chars / 4), different for every index."""
    topic = _WORDS[index % len(_WORDS)]
    lines = [f'"""Helpers for the {topic} service, part {index}."""', ""]
    n = 0
    while sum(len(line) + 1 for line in lines) < tokens * 4:
        word = _WORDS[(index + n) % len(_WORDS)]
        lines += [f"def {topic}_{word}_{n}(value: int, limit: int = {100 + n}) -> int:",
                  f'    """Clamp a {word} value for the {topic} path (step {n})."""',
                  f"    return min(max(value, {n}), limit) + {index}", ""]
        n += 1
    return "\n".join(lines)


def write_files(root: Path, count: int, tokens: int) -> list[str]:
    paths = []
    for index in range(1, count + 1):
        rel = f"lib/module_{index:02d}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(module_text(index, tokens), encoding="utf-8")
        paths.append(rel)
    return paths


def _count(entries: list[dict[str, Any]], kind: str, custom: str | None = None) -> int:
    return sum(1 for e in entries if e.get("type") == kind and (custom is None or e.get("customType") == custom))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=1400, help="about this many tokens per file")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-base")
    parser.add_argument("--api-key")
    parser.add_argument("--context-window", type=int)
    args = parser.parse_args()
    cwd = Path.cwd()
    paths = write_files(cwd, args.files, args.tokens)
    options = AppOptions(cwd=cwd, prompt=None, model=args.model, api_base=args.api_base, api_key=args.api_key,
                         context_window=args.context_window, session=args.session)
    loaded = load_settings(options.cwd, options.settings_overrides())
    spans: list[float] = []  # seconds of each compaction, from its start event to its end event
    started: list[float] = []
    reads = 0

    def emit(event: object) -> None:
        nonlocal reads
        if isinstance(event, CompactionStart):
            started.append(time.monotonic())
        elif isinstance(event, CompactionEnd) and started:
            spans.append(time.monotonic() - started.pop())
        elif isinstance(event, ToolExecutionStart) and event.tool_name == "read":
            reads += 1

    runtime = build_runtime(options, loaded.settings, emit)
    before = runtime.store.branch()
    began = time.monotonic()
    for path in paths:
        runtime.session.prompt(PROMPT.format(path=path))
    added = runtime.store.branch()[len(before):]  # one linear branch: the loop only appends to it
    print(json.dumps({
        "turns": len(paths), "reads": reads, "compactions": _count(added, "compaction"),
        "clearings": _count(added, "custom", CLEARED_TYPE), "compact_s": round(sum(spans), 1),
        "loop_s": round(time.monotonic() - began, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
