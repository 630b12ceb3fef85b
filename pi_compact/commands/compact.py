"""``pi-compact compact SESSION``: preview (--dry-run) or perform a compaction of a session file."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pi_compact.compaction.preview import dry_run
from pi_compact.errors import UsageError
from pi_compact.jstext import dumps_json
from pi_compact.session.branch_tail import read_branch_tail
from pi_compact.session.entries import Entry
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings


@dataclass(frozen=True)
class CompactOptions:
    """The command's flags."""

    session: Path
    dry_run: bool = False
    as_json: bool = False
    context_window: int | None = None
    instructions: str | None = None
    model: str | None = None
    api_base: str | None = None
    api_key: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def run_compact(options: CompactOptions, settings: Settings) -> int:
    """Run the command; returns the exit code."""
    if options.dry_run:
        # A preview only reads the tail of the current branch; the lean read keeps a 100 MB session
        # well under its file size in memory (a full load takes several times that) and is faster.
        lean = read_branch_tail(options.session)
        if lean is not None:
            _warn(lean.warnings)
            return _dry_run(options, settings, lean.entries)
    store = SessionStore.open(options.session, str(Path.cwd()), _now_ms())
    _warn(store.warnings)
    if options.dry_run:
        return _dry_run(options, settings, store.branch())
    from pi_compact.commands.compact_run import compact_file

    return compact_file(options, settings, store)


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")


def _window(options: CompactOptions, settings: Settings) -> int:
    if options.context_window is not None:
        return options.context_window
    if options.model is None and settings.default_model is None:
        raise UsageError("Pass --context-window N (or --model M, to take the window from the model's info).")
    from pi_compact.llm.resolve import resolve_model

    info = resolve_model(
        options.model, api_base=options.api_base, api_key=options.api_key, context_window=None, settings=settings
    )
    return info.context_window


def _dry_run(options: CompactOptions, settings: Settings, branch: list[Entry]) -> int:
    window = _window(options, settings)
    report, _ = dry_run(branch, settings.compaction, window)
    if options.as_json:
        sys.stdout.write(dumps_json(report))
        sys.stdout.write("\n")  # not appended to the text: that would copy a report of many MB once more
        return 0
    from rich.console import Console

    from pi_compact.ui.report import render_dry_run

    render_dry_run(
        Console(), report, session=str(options.session), window=window,
        reserve=settings.compaction.reserve_tokens,
    )
    return 0
