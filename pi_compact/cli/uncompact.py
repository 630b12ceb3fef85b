"""``pi-compact uncompact SESSION``: undo the latest compaction of the session's current branch.

Appends one entry and deletes nothing (``session/tree.py``); refused with the file unchanged when the
restored context would not fit the window or would drop later messages, unless ``--force``.
"""

from __future__ import annotations

from pathlib import Path

from pi_compact.cli.choices import choose_model, fitted_settings, load_settings, warn, window_for
from pi_compact.cli.exits import report
from pi_compact.clock import now_ms
from pi_compact.errors import PiCompactError, UsageError


def uncompact_file(
    session: Path, *, force: bool = False, context_window: int | None = None, model: str | None = None
) -> int:
    """Run the command; prints the outcome; returns the exit code."""
    try:
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if not session.is_file():
            raise UsageError(f"Session file {session} does not exist.")
        from pi_compact.agent.session import uncompact_store
        from pi_compact.session.store import SessionStore

        loaded = load_settings(Path.cwd(), {})
        model = choose_model(model, loaded.settings)
        window = window_for(context_window, model, loaded.settings)
        if window is None and not force:
            raise UsageError("Pass --context-window N (or --model M) so the restored context can be checked "
                             "against the window, or --force to restore it unchecked.")
        settings = fitted_settings(loaded.settings, window, model, loaded.sources) if window else loaded.settings
        store = SessionStore.open(session, str(Path.cwd()), now_ms(), hold=True)
        try:
            warn(store.warnings)
            outcome = uncompact_store(store, settings, force=force, context_window=window)
        finally:
            store.close()
    except (PiCompactError, KeyboardInterrupt) as exc:
        return report(exc, cancelled="cancelled; the session file was not changed.")
    from rich.console import Console

    from pi_compact.ui.tree_view import uncompact_block

    Console().print(uncompact_block(outcome, in_repl=False))
    return 0

