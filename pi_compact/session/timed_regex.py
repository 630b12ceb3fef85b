"""Regular expressions from the model, matched under a deadline.

Python's ``re`` cannot be interrupted: ``(a+)+$`` over a long line backtracks for hours inside one
``search`` call, holding the GIL, deaf to Esc. The ``regex`` module (a declared dependency) takes a
per-call ``timeout``; patterns are compiled with it (its default mode reads ``re``'s syntax) and
``timed_search`` gives each call what is left until the deadline, raising ``PatternTimeout`` when it is
gone; ``run_cancellable`` waits for a search in another thread so Esc answers at once.

Compiling is bounded too: ``regex`` writes a counted repeat out in full, so ``x{10000000}`` takes
seconds and gigabytes before any search starts (``x{100000000}`` exhausts memory). ``check_pattern``
refuses, before compiling, a pattern longer than ``MAX_PATTERN_CHARS``, a repeat count above
``MAX_REPEAT`` and nested repeats whose written-out program would exceed ``MAX_PROGRAM`` units (one
unit is about a literal character; 100,000 of them compile in about 30 ms and 30 MB).
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


MAX_PATTERN_CHARS = 2_000
MAX_REPEAT = 10_000
MAX_PROGRAM = 100_000
# A counted repeat: {m}, {m,}, {m,n} or {,n} (regex reads {,n} as {0,n}); anything else after "{" is literal.
_COUNTED = re.compile(r"\{(\d*)(,?)(\d*)\}")


class PatternTimeout(Exception):
    """A regular expression ran past its deadline."""


def check_pattern(source: str) -> None:
    """Raise ValueError, saying what to change, when compiling ``source`` could cost more than a moment.

    Reads the pattern as ``regex`` would without compiling it: escapes and character classes are one
    unit, a group is the sum of what it holds, and a counted repeat multiplies what it follows (so
    ``(x{100}){100}`` is 10,000 units). Alternatives are added, not maxed: the bound may only be high.
    """
    if len(source) > MAX_PATTERN_CHARS:
        raise ValueError(f"the regular expression is {len(source):,} characters long; at most "
                         f"{MAX_PATTERN_CHARS:,} are accepted")
    frames: list[list[int]] = [[0, 0]]  # per open group: [units so far, units of the last item]
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            index = _escape_end(source, index)
            _add(frames[-1], 1)
            continue
        if char == "[":
            index = _class_end(source, index)
            _add(frames[-1], 1)
            continue
        if char == "(":
            frames.append([0, 0])
        elif char == ")" and len(frames) > 1:
            inner = frames.pop()
            _add(frames[-1], inner[0] + 1)
        elif char == "{" and (counted := _COUNTED.match(source, index)) is not None and counted.group(0) != "{,}":
            low, high = int(counted.group(1) or 0), counted.group(3)
            times = max(low, int(high)) if high else low + (1 if counted.group(2) else 0)
            if times > MAX_REPEAT:
                raise ValueError(f"{counted.group(0)} repeats {times:,} times; at most {MAX_REPEAT:,} are "
                                 "accepted (search for a shorter run, or for the words around it)")
            frame = frames[-1]
            frame[0] += frame[1] * (max(times, 1) - 1)
            frame[1] *= max(times, 1)
            index = counted.end()
            if frame[0] > MAX_PROGRAM:
                break
            continue
        elif char not in "|*+?^$":
            _add(frames[-1], 1)
        index += 1
    size = sum(frame[0] for frame in frames)
    if size > MAX_PROGRAM:
        raise ValueError(f"its repeats written out come to more than {MAX_PROGRAM:,} characters (nested counted "
                         "repeats multiply); search for a shorter run, or for the words around it")


def _add(frame: list[int], units: int) -> None:
    frame[0] += units
    frame[1] = units


def _escape_end(source: str, index: int) -> int:
    """Just past the escape at ``index`` (``\\N{...}``, ``\\p{...}`` and ``\\x{...}`` whole)."""
    if source.startswith(("\\N{", "\\p{", "\\P{", "\\x{"), index):
        close = source.find("}", index)
        if close > 0:
            return close + 1
    return index + 2


def _class_end(source: str, index: int) -> int:
    """Just past the character class opening at ``index`` (a first "]" or "^]" is a member)."""
    at = index + 1
    if source.startswith("^", at):
        at += 1
    if source.startswith("]", at):
        at += 1
    while at < len(source) and source[at] != "]":
        at += 2 if source[at] == "\\" else 1
    return at + 1


def compile_pattern(source: str, flags: int = 0) -> Any:
    """A compiled pattern (``regex``'s when installed); raises one of ``ERRORS`` for a bad one.

    A pattern from the model must pass ``check_pattern`` first."""
    return _engine.compile(source, flags)


def lower_pattern(source: str) -> str:
    """``source`` with its literal characters lower-cased and its escapes (``\\D``, ``\\W``...) kept.

    Searching lower-cased text with it is a case-insensitive search that keeps ``re``'s fast literal
    prefix scan, which ``re.IGNORECASE`` turns off (three to seven times slower on a big session).
    """
    out: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            # An escape is kept whole: \D is not \d, and a \N{NAME} keeps its name.
            end = source.find("}", index) + 1 if source.startswith("\\N{", index) else 0
            end = end if end > 0 else index + 2
            out.append(source[index:end])
            index = end
            continue
        out.append(char.lower())
        index += 1
    return "".join(out)


def model_pattern(source: str) -> tuple[Any, Any]:
    """A model's pattern compiled twice: for lower-cased text, and case-insensitive for the original.

    Raises ValueError saying why when it is refused (``check_pattern``, before any compiling) or invalid.
    """
    try:
        check_pattern(source)
        original = compile_pattern(source, IGNORECASE | MULTILINE)
    except ValueError as exc:
        raise ValueError(f"the regular expression {source!r} was not run: {exc}") from exc
    except ERRORS as exc:
        raise ValueError(f"{source!r} is not a valid regular expression ({exc})") from exc
    try:
        lowered = compile_pattern(lower_pattern(source), MULTILINE)
    except ERRORS:
        lowered = original  # e.g. a lower-cased group name clashes: the slower search still works
    return lowered, original


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
    "ERRORS", "IGNORECASE", "MAX_PATTERN_CHARS", "MAX_PROGRAM", "MAX_REPEAT", "MULTILINE", "PatternTimeout",
    "check_pattern", "compile_pattern", "lower_pattern", "model_pattern", "run_cancellable",
    "timed_search",
]
