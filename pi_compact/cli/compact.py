"""``pi-compact compact SESSION``: check the flags, then preview (--dry-run) or perform a compaction.

``compact_command`` takes the flags (from typer or the fast path) and returns the exit code; the dry
run is answered here, the model run is ``compact_run``.
"""

from __future__ import annotations

import codecs
import functools
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pi_compact.agent.compaction.reasons import SKIP_TEXT, too_small_text
from pi_compact.cli.choices import CompactOptions, choose_model, command_window, fitted_settings, load_settings, warn
from pi_compact.cli.exits import report
from pi_compact.clock import now_ms
from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.digest import digest_entry, digest_estimator
from pi_compact.compaction.plan import skip_reason
from pi_compact.compaction.preview import dry_run
from pi_compact.compaction.tokens import Estimator, estimator_for
from pi_compact.errors import PiCompactError, UsageError, raise_errors
from pi_compact.session.branch_tail import open_branch_tail
from pi_compact.session.entries import Entry
from pi_compact.session.store import SessionStore, gc_paused
from pi_compact.settings import Settings


def compact_command(
    session: Path, *, dry_run: bool = False, as_json: bool = False, keep_recent_tokens: int | None = None,
    reserve_tokens: int | None = None, context_window: int | None = None, token_estimator: str | None = None,
    instructions: str | None = None, model: str | None = None, api_base: str | None = None,
    api_key: str | None = None, no_fallback: bool = False, compaction_model: str | None = None,
) -> int:
    """The command from its flags; returns the exit code."""
    untouched = "cancelled; the session file was not changed."
    try:
        for name, tokens in (("--keep-recent-tokens", keep_recent_tokens), ("--reserve-tokens", reserve_tokens)):
            if tokens is not None and tokens < 0:
                raise UsageError(f"{name} must be zero or a positive number of tokens, got {tokens}.")
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if token_estimator not in (None, "chars4", "auto"):
            raise UsageError(f"--token-estimator must be chars4 or auto, got {token_estimator!r}.")
        if not session.is_file():
            raise UsageError(f"Session file {session} does not exist.")
        flagged: dict[str, Any] = {
            "compaction.keepRecentTokens": keep_recent_tokens, "compaction.reserveTokens": reserve_tokens,
            "compaction.tokenEstimator": token_estimator, "compaction.model": compaction_model,
        }
        loaded = load_settings(Path.cwd(), {key: value for key, value in flagged.items() if value is not None})
        options = CompactOptions(
            session=session, dry_run=dry_run, as_json=as_json, context_window=context_window,
            instructions=instructions, model=choose_model(model, loaded.settings), api_base=api_base,
            api_key=api_key, no_fallback=no_fallback,
        )
        return run_compact(options, loaded.settings, loaded.sources)
    except PiCompactError as exc:
        if raise_errors():
            raise
        return report(exc, cancelled=untouched)
    except KeyboardInterrupt as exc:
        return report(exc, cancelled=untouched)


def run_compact(options: CompactOptions, settings: Settings, sources: Mapping[str, str] | None = None) -> int:
    """Run the command; returns the exit code. ``sources``: where each setting came from (for warnings)."""
    if options.dry_run:
        # The collector would only rescan the many objects a large session is read into, and find
        # no garbage; _lean_dry_run's locals are gone when it returns, before it is enabled again.
        with gc_paused():
            code = _lean_dry_run(options, settings, sources)
        if code is None:
            store = SessionStore.open(options.session, str(Path.cwd()), now_ms(), hold=False)
            warn(store.warnings)
            code = _dry_run(options, settings, store.branch(), sources=sources)
        if code == 0 and not options.as_json:
            _say_engine(options, settings, sources)
        return code
    from pi_compact.cli.compact_run import compact_file  # agent.compaction.offline compacts the file

    return compact_file(options, settings, sources)


def _lean_dry_run(options: CompactOptions, settings: Settings, sources: Mapping[str, str] | None) -> int | None:
    """A preview from the lean read of the branch tail, or None when the file needs a full load.

    A 100 MB session stays well under its file size in memory this way (a full load takes about ten
    times that) and is parsed once.
    """
    # Only JSON shows the history, so only it needs the serialized texts (digesting is faster without).
    digest = functools.partial(digest_entry, text=options.as_json)
    with open_branch_tail(options.session, digest) as lean:
        if lean is None:
            return None
        warn(lean.warnings)
        estimator = digest_estimator(estimator_for(settings.compaction.token_estimator), lean.load)
        return _dry_run(options, settings, lean.entries, estimator, sources)


def _window(options: CompactOptions, settings: Settings) -> int:
    window = command_window(options.context_window, options.model, settings, api_base=options.api_base,
                            api_key=options.api_key)
    if window is None:
        raise UsageError("Pass --context-window N (or --model M, to take the window from the model's info).")
    return window


def _dry_run(
    options: CompactOptions, settings: Settings, branch: list[Entry], estimator: Estimator | None = None,
    sources: Mapping[str, str] | None = None,
) -> int:
    window = _window(options, settings)
    settings = fitted_settings(settings, window, options.model if options.context_window is None else None, sources)
    preview = dry_run(branch, settings.compaction, window, estimator)
    if options.as_json:
        # In pieces: the serialized history can be most of a large session, and building the report
        # as one string (then its escaped copy) would take several times its size.
        _write_utf8(preview.json_chunks())
        sys.stdout.write("\n")
        return 0
    from rich.console import Console

    from pi_compact.ui.report import render_dry_run

    skip = skip_reason(branch, preview.plan)
    nothing = None if skip is None else SKIP_TEXT[skip] if skip != "too_small" else too_small_text(
        preview.kept_tokens, settings.compaction.keep_recent_tokens, hint="--keep-recent-tokens")
    # The table shows the size as the terminal counts it; the JSON above keeps pi's figure.
    shown = {**preview.report(), "context_tokens": preview.current_tokens, "should_compact": preview.current_due}
    render_dry_run(
        Console(), shown, session=str(options.session), window=window,
        threshold=Budgets.of(settings.compaction, window).threshold, nothing=nothing,
    )
    return 0


def _say_engine(options: CompactOptions, settings: Settings, sources: Mapping[str, str] | None) -> None:
    """The engine the compaction would run first, and why: its compactor is built as ``compact FILE`` (and the
    terminal) build it, which needs the model's facts, not the model layer (litellm) nor the network."""
    from rich.console import Console
    from rich.text import Text

    if options.model is None:
        Console().print(Text("engine: not named without --model (the model decides which engines can run)"))
        return
    from pi_compact.cli.compact_run import dry_run_engine

    try:
        described = dry_run_engine(options, settings, sources)
    except PiCompactError as exc:  # the model cannot be built as the run would (a key, a models.json entry)
        described = f"not named — {exc}"
    if described is not None:
        Console().print(Text(f"engine: {described}"), soft_wrap=True)


def _write_utf8(chunks: Iterable[bytes]) -> None:
    """Write UTF-8 text to stdout: straight to its byte stream when stdout encodes as UTF-8 anyway."""
    out = sys.stdout
    binary = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if binary is not None and encoding and codecs.lookup(encoding).name == "utf-8":
        out.flush()  # what was written as text goes first
        for chunk in chunks:
            binary.write(chunk)
        return
    for chunk in chunks:
        out.write(chunk.decode("utf-8"))
