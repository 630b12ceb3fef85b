"""The typer app, built from the flag tables in ``flags`` on first use (importing typer costs ~0.25 s).

``build_app()`` gives each command function a signature made from its table, so typer parses exactly
the flags the tables declare; the functions themselves take keyword arguments and return by raising
``typer.Exit`` with the command's exit code.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pi_compact import __version__
from pi_compact.cli.flags import COMPACT, COMPACT_SESSION, MAIN, UNCOMPACT, UNCOMPACT_SESSION, Flag, Positional

if TYPE_CHECKING:
    import typer

_TYPES: dict[str, Any] = {"bool": bool, "int": int | None, "str": str | None, "path": Path | None,
                          "paths": list[Path] | None}


def _with_signature(
    function: Callable[..., None], flags: tuple[Flag, ...], positional: Positional | None = None,
    *, context: bool = False,
) -> Callable[..., None]:
    """``function`` with the signature typer reads: the positional argument, then one option per flag."""
    import typer

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("ctx", keyword, annotation=typer.Context)] if context else []
    if positional is not None:
        params.append(inspect.Parameter(positional.dest, keyword,
                                        annotation=Annotated[Path, typer.Argument(help=positional.help)]))
    for flag in flags:
        option = typer.Option(*flag.names, help=flag.help or None, metavar=flag.metavar, hidden=flag.hidden)
        kind = str if flag.default is not None else _TYPES[flag.kind]
        default = False if flag.kind == "bool" else flag.default
        params.append(inspect.Parameter(flag.dest, keyword, default=default, annotation=Annotated[kind, option]))
    function.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    function.__annotations__ = {param.name: param.annotation for param in params}
    return function


def _main(ctx: typer.Context, **values: Any) -> None:
    """Start the agent: `pi-compact [PROMPT]` opens the terminal (sending PROMPT first), `-p PROMPT` prints
    one answer (text piped on stdin is added as context), `compact FILE` works on a session file."""
    import typer

    if values.pop("version"):
        sys.stdout.write(f"pi-compact {__version__}\n")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is not None:
        return  # keep it so: plain `compact` calls skip this callback (the fast path in main)
    from pi_compact.cli.start import StartFlags, start

    raise typer.Exit(start(StartFlags(**values)))


def _compact(**values: Any) -> None:
    """Compact a session file, or preview the compaction with --dry-run."""
    import typer

    from pi_compact.cli.compact import compact_command

    raise typer.Exit(compact_command(**values))


def _uncompact(**values: Any) -> None:
    """Undo the latest compaction of the session's current branch (nothing is deleted)."""
    import typer

    from pi_compact.cli.uncompact import uncompact_file

    raise typer.Exit(uncompact_file(**values))


@functools.cache
def build_app() -> typer.Typer:
    """The typer app with the main command and the ``compact`` and ``uncompact`` subcommands."""
    import typer

    app = typer.Typer(
        add_completion=False,
        no_args_is_help=False,
        invoke_without_command=True,
        help="A terminal coding agent whose core is context compaction (pi-compatible sessions).",
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_with_signature(_main, MAIN, context=True))
    app.command("compact")(_with_signature(_compact, COMPACT, COMPACT_SESSION))
    app.command("uncompact")(_with_signature(_uncompact, UNCOMPACT, UNCOMPACT_SESSION))
    return app
