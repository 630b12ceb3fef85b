"""The ``pi-compact`` entry point: argv in, exit code out.

Nothing heavy is imported at module level: ``--version`` and the dry run must start in well under a
second, so typer is imported only when a line needs it and litellm only by what calls a model.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, NoReturn, TextIO

from pi_compact import __version__
from pi_compact.cli.argv import fast_compact_args
from pi_compact.cli.exits import EXIT_FAILED, EXIT_USAGE


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if argv == ["--version"]:  # before anything else is imported: it must be instant
        sys.stdout.write(f"pi-compact {__version__}\n")
        return
    try:
        fast = fast_compact_args(argv)
        if fast is not None:
            _run_fast(fast)
        from pi_compact.cli.argv import split_prompt_words, unknown_option_message
        from pi_compact.cli.flags import INITIAL_OPTION, option_table

        message = unknown_option_message(argv, option_table())
        if message is not None:  # one line, where typer's box takes four
            sys.stderr.write(f"{message}\n")
            sys.exit(EXIT_USAGE)
        from pi_compact.cli.typer_app import build_app

        rest, words = split_prompt_words(argv)
        build_app()(args=[*rest, INITIAL_OPTION, " ".join(words)] if words else rest)
    except SystemExit as done:
        if "litellm" not in sys.modules and "xllamacpp" not in sys.modules:  # the local model's threads too
            raise
        _exit_now(done.code)


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
        status = EXIT_FAILED
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe or stream: nothing more can be said
    from pi_compact.session.lock import release_all

    release_all()  # os._exit skips the finalizers that would remove the session lock files
    os._exit(status)


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
    """``compact`` parsed without typer (``argv.fast_compact_args``): run it and exit as typer would."""
    from pi_compact.cli.compact import compact_command

    try:
        code = compact_command(**values)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # As typer does: a reader that went away (``| head``) ends the command with 1, silently.
        sys.stdout = _QuietPipe(sys.stdout)
        sys.stderr = _QuietPipe(sys.stderr)
        code = EXIT_FAILED
    sys.exit(code)
