"""The ``pi-compact`` command line: parse flags, wire the pieces, map errors to exit codes.

Nothing heavy is imported at module level: ``--version`` and the dry run must start in well under a
second, so litellm is only imported by the commands that call a model.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TextIO

from pi_compact import __version__
from pi_compact.commands.fast_args import fast_compact_args
from pi_compact.errors import Cancelled, PiCompactError, SessionError, UsageError, raise_errors

if TYPE_CHECKING:
    import typer


class _DeferredApp:
    """The typer app, built on first use: importing typer (and the pydantic it pulls in) costs ~0.25 s.

    ``@app.callback()`` and ``@app.command(...)`` only record the function here; calling ``app()`` (or
    ``app.build()``) imports typer, puts it into this module's globals (the commands' annotations
    name ``typer.Option`` and typer evaluates them in this module) and replays the registrations.
    So commands must declare options with ``Annotated[..., typer.Option(...)]``, never as defaults.
    """

    def __init__(self, **settings: Any) -> None:
        self._settings = settings
        self._steps: list[tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = []
        self._built: Any = None

    def _record(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[..., Any]:
        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            self._steps.append((kind, args, kwargs, func))
            return func

        return register

    def callback(self, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        return self._record("callback", args, kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        return self._record("command", args, kwargs)

    def build(self) -> typer.Typer:
        """The real typer app (built once)."""
        if self._built is None:
            import typer as typer_module

            globals()["typer"] = typer_module
            built = typer_module.Typer(**self._settings)
            for kind, args, kwargs, func in self._steps:
                getattr(built, kind)(*args, **kwargs)(func)
            self._built = built
        result: typer.Typer = self._built
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.build()(*args, **kwargs)


app = _DeferredApp(
    add_completion=False,
    no_args_is_help=False,
    invoke_without_command=True,
    help="A terminal coding agent whose core is context compaction (pi-compatible sessions).",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_USAGE = 2


def _fail(message: str, code: int = 1) -> None:
    sys.stderr.write(f"pi-compact: {message}\n")
    raise typer.Exit(code)


def _non_negative(name: str, value: int | None) -> None:
    if value is not None and value < 0:
        raise UsageError(f"{name} must be zero or a positive number of tokens, got {value}.")


def _load_settings(cwd: Path, overrides: dict[str, Any], trust: Any = None) -> Any:
    from pi_compact.settings.files import load_settings

    loaded = load_settings(cwd, overrides, trust=trust)
    for warning in loaded.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    return loaded


@app.callback()
def main_callback(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
    prompt: Annotated[str | None, typer.Option("--print", "-p", help="Run one prompt and print the answer.")] = None,
    mode: Annotated[str, typer.Option(metavar="[text|json]", help="With -p: text (the answer) or json (every "
                                      "event).")] = "text",
    model: Annotated[str | None, typer.Option(help="litellm model string, e.g. openai/gpt-4o.")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint URL.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (else the provider's env var).")] = None,
    context_window: Annotated[int | None, typer.Option(help="Override the model's context window.")] = None,
    session: Annotated[Path | None, typer.Option(help="Open or create this session file.")] = None,
    continue_recent: Annotated[
        bool, typer.Option("--continue", "-c", help="Continue the newest session here.")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", "-r", help="Pick a session of this project to continue.")
    ] = False,
    no_session: Annotated[bool, typer.Option("--no-session", help="Keep the session in memory only.")] = False,
    no_auto_compact: Annotated[
        bool, typer.Option("--no-auto-compact", help="No automatic compaction (threshold or overflow).")
    ] = False,
    extension: Annotated[
        list[Path] | None, typer.Option(metavar="FILE", help="Load this extension file (repeatable).")
    ] = None,
    session_dir: Annotated[str | None, typer.Option(help="Directory for new session files.")] = None,
    approve: Annotated[str | None, typer.Option(metavar="[none|edits|all]", help="Ask before write/edit (edits) "
                                                "or also bash (all); default none, or the approve setting.")] = None,
    compaction_model: Annotated[str | None, typer.Option(help="litellm model string that writes compaction "
                                                         "summaries (else compaction.model, else the chat "
                                                         "model).")] = None,
    local_model_path: Annotated[Path | None, typer.Option(metavar="FILE", help="A GGUF model file for --model "
                                                           "local (else the bundled one).")] = None,
    trust_project: Annotated[bool, typer.Option("--trust-project", help="Apply this directory's .pi settings "
                                                "that can send data elsewhere or run code, without asking.")] = False,
    initial_message: Annotated[str | None, typer.Option("--initial-message", hidden=True)] = None,
) -> None:
    """Start the agent: `pi-compact [PROMPT]` opens the terminal (sending PROMPT first), `-p PROMPT` prints
    one answer (text piped on stdin is added as context), `compact FILE` works on a session file."""
    if version:
        sys.stdout.write(f"pi-compact {__version__}\n")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is not None:
        return  # keep it so: plain `compact` calls skip this callback (fast path below)
    try:
        if mode not in ("text", "json"):
            raise UsageError(f"--mode must be text or json, got {mode!r}.")
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if approve not in (None, "none", "edits", "all"):
            raise UsageError(f"--approve must be none, edits or all, got {approve!r}.")
        if session is not None and no_session:
            raise UsageError("--session and --no-session cannot be used together.")
        from pi_compact.cli_input import plan_start, read_piped_stdin
        from pi_compact.options import AppOptions

        plan = plan_start(prompt, [initial_message] if initial_message else [], read_piped_stdin(sys.stdin))
        prompt = plan.print_prompt

        options = AppOptions(
            cwd=Path.cwd(), prompt=prompt, mode=mode, model=model, api_base=api_base, api_key=api_key,
            context_window=context_window, session=session, continue_recent=continue_recent,
            no_session=no_session, auto_compact=not no_auto_compact, extensions=tuple(extension or ()),
            session_dir=session_dir, approve=approve, compaction_model=compaction_model,
            local_model_path=str(local_model_path) if local_model_path else None, trust_project=trust_project,
        )
        from pi_compact.ui.trust_prompt import policy

        loaded = _load_settings(Path.cwd(), options.settings_overrides(), policy(trust_project, prompt is None))
        if resume and prompt is None and session is None:
            from dataclasses import replace

            from pi_compact.paths import resolve_session_dir
            from pi_compact.ui.commands.resume import pick_at_start

            directory = resolve_session_dir(Path.cwd(), flag=session_dir, setting=loaded.settings.session_dir)
            options = replace(options, session=pick_at_start(directory))
        if prompt is not None:
            from pi_compact.app import run_print_mode

            raise typer.Exit(run_print_mode(options, loaded.settings, sources=loaded.sources))
        if mode == "json":
            raise UsageError("--mode json needs a prompt: pass -p PROMPT.")
        from pi_compact.app import AppRuntimes
        from pi_compact.ui.repl import run_repl

        raise typer.Exit(run_repl(AppRuntimes(options), loaded, first_message=plan.first_message))
    except PiCompactError as exc:
        if raise_errors():
            raise
        _fail(str(exc), EXIT_USAGE if isinstance(exc, (UsageError, SessionError)) else 1)


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
    compaction_model: Annotated[str | None, typer.Option(help="litellm model string that writes the summary "
                                                         "(else compaction.model, else --model).")] = None,
    no_fallback: Annotated[
        bool, typer.Option("--no-fallback", help="If the model fails, write nothing (exit 1) instead of a "
                           "model-free summary (exit 3).")
    ] = False,
) -> None:
    """Compact a session file, or preview the compaction with --dry-run."""
    raise typer.Exit(
        _compact(
            session, dry_run=dry_run, as_json=as_json, keep_recent_tokens=keep_recent_tokens,
            reserve_tokens=reserve_tokens, context_window=context_window, token_estimator=token_estimator,
            instructions=instructions, model=model, api_base=api_base, api_key=api_key, no_fallback=no_fallback,
            compaction_model=compaction_model,
        )
    )


@app.command("uncompact")
def uncompact_command(
    session: Annotated[Path, typer.Argument(help="The session file (.jsonl).")],
    force: Annotated[bool, typer.Option("--force", help="Restore even if it no longer fits the window or "
                                        "drops messages written after the compaction.")] = False,
    context_window: Annotated[int | None, typer.Option(help="The model's context window.")] = None,
    model: Annotated[str | None, typer.Option(help="litellm model string (its window is used).")] = None,
) -> None:
    """Undo the latest compaction of the session's current branch (nothing is deleted)."""
    from pi_compact.commands.uncompact import uncompact_file

    raise typer.Exit(uncompact_file(session, force=force, context_window=context_window, model=model))


def _report(message: str, code: int) -> int:
    sys.stderr.write(f"pi-compact: {message}\n")
    return code


def _compact(
    session: Path, *, dry_run: bool = False, as_json: bool = False, keep_recent_tokens: int | None = None,
    reserve_tokens: int | None = None, context_window: int | None = None, token_estimator: str | None = None,
    instructions: str | None = None, model: str | None = None, api_base: str | None = None,
    api_key: str | None = None, no_fallback: bool = False, compaction_model: str | None = None,
) -> int:
    """The ``compact`` command without typer (shared by typer and the fast path); returns the exit code."""
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
        if compaction_model is not None:
            overrides["compaction.model"] = compaction_model
        from pi_compact.commands.compact import run_compact
        from pi_compact.commands.options import CompactOptions

        options = CompactOptions(
            session=session, dry_run=dry_run, as_json=as_json, context_window=context_window,
            instructions=instructions, model=model, api_base=api_base, api_key=api_key, no_fallback=no_fallback,
        )
        loaded = _load_settings(Path.cwd(), overrides)
        return run_compact(options, loaded.settings, loaded.sources)
    except PiCompactError as exc:
        if raise_errors():
            raise
        if isinstance(exc, Cancelled):
            return _report("cancelled; the session file was not changed.", 130)
        return _report(str(exc), EXIT_USAGE if isinstance(exc, (UsageError, SessionError)) else 1)
    except KeyboardInterrupt:
        return _report("cancelled; the session file was not changed.", 130)


def main() -> None:
    """Console-script entry point."""
    # Answer --version before anything else is imported: it must be instant.
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"pi-compact {__version__}\n")
        return
    try:
        fast = fast_compact_args(sys.argv[1:])
        if fast is not None:
            _run_fast(fast)
        from pi_compact.cli_input import INITIAL_OPTION, split_prompt_words

        _reject_unknown_options(sys.argv[1:])
        rest, words = split_prompt_words(sys.argv[1:])
        app(args=[*rest, INITIAL_OPTION, " ".join(words)] if words else rest)
    except SystemExit as done:
        if "litellm" not in sys.modules and "xllamacpp" not in sys.modules:  # the local model's threads too
            raise
        _exit_now(done.code)


def _reject_unknown_options(argv: list[str]) -> None:
    """Exit 2 with one line for a mistyped ``--option`` (typer's own box takes four)."""
    import typer as typer_module

    from pi_compact.cli_flags import option_table, unknown_option_message

    message = unknown_option_message(argv, option_table(typer_module.main.get_command(app.build())))
    if message is not None:
        sys.stderr.write(f"{message}\n")
        sys.exit(EXIT_USAGE)


def _exit_now(code: object) -> NoReturn:
    """Leave without waiting for threads that a model library may still run.

    After a cancel, a request thread may still be waiting for the provider's first byte, and litellm
    keeps executor threads that the interpreter would join at exit; the user asked to stop, so stop.
    Session lines are complete in the file as soon as they are appended, so nothing is lost by
    skipping the shutdown.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe or stream: nothing more can be said
    from pi_compact.session.lock import release_all

    release_all()  # os._exit skips the finalizers that would remove the session lock files
    os._exit(status)


# ---- fast path: `compact` without typer ---------------------------------------------------------
# Plain, well-formed `compact` command lines (the dry run above all) skip typer entirely: parsing
# them with typer costs more than the whole dry run of a 1 MB session. Anything this parser is not
# sure about (--help, unknown or malformed options, odd values) goes to typer, so messages for bad
# input stay typer's. For what it accepts, it produces exactly the arguments typer would
# (``commands.fast_args``).

class _QuietPipe:
    """A stream whose flush ignores a closed pipe (what click does after EPIPE, so exit stays quiet)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _run_fast(values: dict[str, Any]) -> NoReturn:
    try:
        code = _compact(**values)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # As typer does: a reader that went away (``| head``) ends the command with 1, silently.
        sys.stdout = _QuietPipe(sys.stdout)
        sys.stderr = _QuietPipe(sys.stderr)
        code = 1
    sys.exit(code)


__all__ = ["app", "main"]
