"""The ``pi-compact`` command line: parse flags, wire the pieces, map errors to exit codes.

Nothing heavy is imported at module level: ``--version`` and the dry run must start in well under a
second, so litellm is only imported by the commands that call a model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from pi_compact import __version__
from pi_compact.errors import Cancelled, PiCompactError, SessionError, UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    invoke_without_command=True,
    help="A terminal coding agent whose core is context compaction (pi-compatible sessions).",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

EXIT_USAGE = 2


def _fail(message: str, code: int = 1) -> None:
    sys.stderr.write(f"pi-compact: {message}\n")
    raise typer.Exit(code)


def _non_negative(name: str, value: int | None) -> None:
    if value is not None and value < 0:
        raise UsageError(f"{name} must be zero or a positive number of tokens, got {value}.")


def _load_settings(cwd: Path, overrides: dict[str, Any]) -> Any:
    from pi_compact.settings_files import load_settings

    loaded = load_settings(cwd, overrides)
    for warning in loaded.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    return loaded


@app.callback()
def main_callback(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
    prompt: Annotated[str | None, typer.Option("--print", "-p", help="Run one prompt and print the answer.")] = None,
    mode: Annotated[str, typer.Option(help="With -p: text (the answer) or json (every event).")] = "text",
    model: Annotated[str | None, typer.Option(help="litellm model string, e.g. openai/gpt-4o.")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (else the provider's env var).")] = None,
    context_window: Annotated[int | None, typer.Option(help="Override the model's context window.")] = None,
    session: Annotated[Path | None, typer.Option(help="Open or create this session file.")] = None,
    continue_recent: Annotated[
        bool, typer.Option("--continue", "-c", help="Continue the newest session here.")
    ] = False,
    no_session: Annotated[bool, typer.Option("--no-session", help="Keep the session in memory only.")] = False,
    no_auto_compact: Annotated[
        bool, typer.Option("--no-auto-compact", help="No automatic compaction (threshold or overflow).")
    ] = False,
    extension: Annotated[
        list[Path] | None, typer.Option(metavar="FILE", help="Load this extension file (repeatable).")
    ] = None,
    session_dir: Annotated[str | None, typer.Option(help="Directory for new session files.")] = None,
) -> None:
    """Start the agent (interactive, or -p for one prompt); `compact` works on a session file."""
    if version:
        sys.stdout.write(f"pi-compact {__version__}\n")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is not None:
        return
    try:
        if mode not in ("text", "json"):
            raise UsageError(f"--mode must be text or json, got {mode!r}.")
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if session is not None and no_session:
            raise UsageError("--session and --no-session cannot be used together.")
        from pi_compact.app import AppOptions

        options = AppOptions(
            cwd=Path.cwd(), prompt=prompt, mode=mode, model=model, api_base=api_base, api_key=api_key,
            context_window=context_window, session=session, continue_recent=continue_recent,
            no_session=no_session, auto_compact=not no_auto_compact, extensions=tuple(extension or ()),
            session_dir=session_dir,
        )
        loaded = _load_settings(Path.cwd(), {})
        if prompt is not None:
            from pi_compact.app import run_print_mode

            raise typer.Exit(run_print_mode(options, loaded.settings))
        if mode == "json":
            raise UsageError("--mode json needs a prompt: pass -p PROMPT.")
        from pi_compact.ui.repl import run_repl

        raise typer.Exit(run_repl(options, loaded))
    except (UsageError, SessionError) as exc:
        _fail(str(exc), EXIT_USAGE)
    except PiCompactError as exc:
        _fail(str(exc), 1)


@app.command("compact")
def compact_command(
    session: Annotated[Path, typer.Argument(help="The session file (.jsonl) to compact.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would happen.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --dry-run: print the plan as JSON.")] = False,
    keep_recent_tokens: Annotated[int | None, typer.Option(help="Tokens of recent messages to keep.")] = None,
    reserve_tokens: Annotated[int | None, typer.Option(help="Headroom below the window.")] = None,
    context_window: Annotated[int | None, typer.Option(help="The model's context window.")] = None,
    token_estimator: Annotated[str | None, typer.Option(help="chars4 (pi's) or auto (CJK-aware).")] = None,
    instructions: Annotated[str | None, typer.Option(help="Extra focus for the summary.")] = None,
    model: Annotated[str | None, typer.Option(help="litellm model string.")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (else the provider's env var).")] = None,
) -> None:
    """Compact a session file, or preview the compaction with --dry-run."""
    try:
        _non_negative("--keep-recent-tokens", keep_recent_tokens)
        _non_negative("--reserve-tokens", reserve_tokens)
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if token_estimator not in (None, "chars4", "auto"):
            raise UsageError(f"--token-estimator must be chars4 or auto, got {token_estimator!r}.")
        if not session.is_file():
            raise UsageError(f"Session file {session} does not exist.")
        overrides: dict[str, Any] = {}
        if keep_recent_tokens is not None:
            overrides["compaction.keepRecentTokens"] = keep_recent_tokens
        if reserve_tokens is not None:
            overrides["compaction.reserveTokens"] = reserve_tokens
        if token_estimator is not None:
            overrides["compaction.tokenEstimator"] = token_estimator
        from pi_compact.commands.compact import CompactOptions, run_compact

        options = CompactOptions(
            session=session, dry_run=dry_run, as_json=as_json, context_window=context_window,
            instructions=instructions, model=model, api_base=api_base, api_key=api_key,
        )
        loaded = _load_settings(Path.cwd(), overrides)
        raise typer.Exit(run_compact(options, loaded.settings))
    except (UsageError, SessionError) as exc:
        _fail(str(exc), EXIT_USAGE)
    except Cancelled:
        _fail("cancelled; the session file was not changed.", 130)
    except PiCompactError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        _fail("cancelled; the session file was not changed.", 130)


def main() -> None:
    """Console-script entry point."""
    # Answer --version before anything else is imported: it must be instant.
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"pi-compact {__version__}\n")
        return
    app()


__all__ = ["app", "main"]
