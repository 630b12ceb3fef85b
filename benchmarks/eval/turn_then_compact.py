"""One chat turn on a session, then the compaction in the same process: the run a prefix reuse needs.

The harness's ``ours-prefix`` and ``ours-serialized`` agents run this (issue 24): the turn leaves the
chat request's prefix in the server's cache (llama.cpp's slot), and the compaction that follows (the
threshold one when the turn crossed it, else ``/compact``) is
asked on that prefix or serialized, as ``compaction.reusePrefix`` in the settings file says. It goes
through the product's own wiring (settings, session file, model, tools, pipeline), like ``-p``.

    python benchmarks/eval/turn_then_compact.py SESSION QUESTION --model M --api-base URL --api-key K \
        --context-window N        # prints one JSON line: the answer, seconds of the turn and the compaction
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pi_compact.agent.events import CompactionEnd, CompactionStart
from pi_compact.cli.choices import load_settings
from pi_compact.cli.wiring import build_runtime
from pi_compact.options import AppOptions
from pi_compact.ui.print_mode import final_text


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("question")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-base")
    parser.add_argument("--api-key")
    parser.add_argument("--context-window", type=int)
    args = parser.parse_args()
    options = AppOptions(cwd=Path.cwd(), prompt=args.question, model=args.model, api_base=args.api_base,
                         api_key=args.api_key, context_window=args.context_window, session=args.session)
    loaded = load_settings(options.cwd, options.settings_overrides())
    # Not print mode's settings: it turns the background summary off, which this run never starts anyway.
    events: list[str] = []
    spans: list[float] = []  # seconds of each compaction, from its start event to its end event
    started: list[float] = []

    def emit(event: object) -> None:
        events.append(type(event).__name__)
        if isinstance(event, CompactionStart):
            started.append(time.monotonic())
        elif isinstance(event, CompactionEnd) and started:
            spans.append(time.monotonic() - started.pop())

    runtime = build_runtime(options, loaded.settings, emit)
    began = time.monotonic()
    reply = runtime.session.prompt(args.question)
    turn_s = time.monotonic() - began
    # A turn that crossed the threshold compacted after its reply (the threshold compaction this run is
    # for); otherwise compact now, as /compact would.
    if runtime.store.compaction_count() == 0:
        runtime.session.compact()
    entries = [e for e in runtime.store.branch() if e.get("type") == "compaction"]
    details = entries[-1].get("details") or {} if entries else {}
    print(json.dumps({
        "answer": final_text(reply) if reply else None, "turn_s": round(turn_s, 1),
        "compact_s": round(sum(spans), 1), "compacted": bool(entries),
        "summary_request": details.get("summaryRequest"), "events": events,
    }))
    return 0 if entries else 3


if __name__ == "__main__":
    sys.exit(main())
