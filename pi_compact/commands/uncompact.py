"""``pi-compact uncompact SESSION``: undo the latest compaction of the session's current branch.

Nothing is deleted or rewritten: one entry is appended after the entry the compaction followed, so
pi and pi-compact both rebuild the context from before it (see ``session/tree.py``). Refused, with
the file unchanged, when the restored context no longer fits the window or messages written after
the compaction would leave the context; ``--force`` overrides both. Exit codes: 0 uncompacted,
1 refused (or nothing to undo), 2 bad usage (missing file, no window known without ``--force``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pi_compact.clock import now_ms
from pi_compact.errors import Cancelled, PiCompactError, SessionError, UsageError
from pi_compact.settings import Settings

EXIT_USAGE = 2


def _window(context_window: int | None, model: str | None, settings: Settings) -> int | None:
    if context_window is not None:
        return context_window
    if model is None and settings.default_model is None:
        return None
    from pi_compact.llm.resolve import resolve_model

    return resolve_model(model, api_base=None, api_key=None, context_window=None, settings=settings).context_window


def uncompact_file(
    session: Path, *, force: bool = False, context_window: int | None = None, model: str | None = None
) -> int:
    """Run the command; prints the outcome; returns the exit code."""
    try:
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if not session.is_file():
            raise UsageError(f"Session file {session} does not exist.")
        from pi_compact.agent.navigator import Navigator
        from pi_compact.commands.options import fitted_settings
        from pi_compact.session.store import SessionStore
        from pi_compact.settings.files import load_settings

        loaded = load_settings(Path.cwd(), {})
        for warning in loaded.warnings:
            sys.stderr.write(f"warning: {warning}\n")
        window = _window(context_window, model, loaded.settings)
        if window is None and not force:
            raise UsageError("Pass --context-window N (or --model M) so the restored context can be checked "
                             "against the window, or --force to restore it unchecked.")
        settings = fitted_settings(loaded.settings, window, model, loaded.sources) if window else loaded.settings
        store = SessionStore.open(session, str(Path.cwd()), now_ms(), hold=True)
        try:
            for warning in store.warnings:
                sys.stderr.write(f"warning: {warning}\n")
            outcome = Navigator(store, None, settings).uncompact(force=force, context_window=window)
        finally:
            store.close()
    except (UsageError, SessionError) as exc:
        sys.stderr.write(f"pi-compact: {exc}\n")
        return EXIT_USAGE
    except (Cancelled, KeyboardInterrupt):
        sys.stderr.write("pi-compact: cancelled; the session file was not changed.\n")
        return 130
    except PiCompactError as exc:
        sys.stderr.write(f"pi-compact: {exc}\n")
        return 1
    from rich.console import Console

    from pi_compact.ui.tree_view import uncompact_block

    Console().print(uncompact_block(outcome, in_repl=False))
    return 0


__all__ = ["uncompact_file"]
