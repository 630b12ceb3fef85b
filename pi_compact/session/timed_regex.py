"""Regular expressions from the model, matched under a deadline.

Python's ``re`` cannot be interrupted: ``(a+)+$`` over a long line backtracks for hours inside one
``search`` call, holding the GIL, deaf to Esc. The ``regex`` module (a declared dependency) takes a
per-call ``timeout``; patterns are compiled with it (its default mode reads ``re``'s syntax) and
``timed_search`` gives each call what is left until the deadline, raising ``PatternTimeout`` when it is
gone; ``run_cancellable`` waits for a search in another thread so Esc answers at once.
"""

from __future__ import annotations

import importlib
import re
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_engine: Any = importlib.import_module("regex")  # untyped; imported by name so mypy does not ask for stubs

IGNORECASE = re.IGNORECASE
MULTILINE = re.MULTILINE
ERRORS: tuple[type[Exception], ...] = (re.error, _engine.error)


class PatternTimeout(Exception):
    """A regular expression ran past its deadline."""


def compile_pattern(source: str, flags: int = 0) -> Any:
    """A compiled pattern (``regex``'s when installed); raises one of ``ERRORS`` for a bad one."""
    return _engine.compile(source, flags)


def timed_search(pattern: Any, text: str, until: float | None) -> Any:
    """``pattern.search(text)``, stopped at ``until`` (a ``time.monotonic()`` value; None: no limit)."""
    if until is None:
        return pattern.search(text)
    left = until - time.monotonic()
    if left <= 0:
        raise PatternTimeout
    try:
        # concurrent: the GIL is released while it matches, so the thread waiting in ``run_cancellable``
        # sees Esc at once instead of after the timeout (which regex checks only now and then).
        return pattern.search(text, timeout=left, concurrent=True)
    except TimeoutError as exc:
        raise PatternTimeout from exc


def run_cancellable(work: Callable[[], T], cancelled: Callable[[], bool], poll: float = 0.05) -> T | None:
    """``work()`` in a daemon thread, waited for while ``cancelled()`` is False; None once it is True.

    A cancelled search is left to end by itself at its own deadline (``timed_search``): it only reads.
    The work's exception is raised here.
    """
    results: list[T] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            results.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as is
            failures.append(exc)

    worker = threading.Thread(target=run, name="timed-regex", daemon=True)
    worker.start()
    while worker.is_alive():
        if cancelled():
            return None
        worker.join(poll)
    if failures:
        raise failures[0]
    return results[0]


__all__ = [
    "ERRORS", "IGNORECASE", "MULTILINE", "PatternTimeout", "compile_pattern", "run_cancellable",
    "timed_search",
]
