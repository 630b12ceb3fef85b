r"""The JSON dialect of pi's ``models.json``, read exactly as pi 0.73.1 reads it, in linear time (pure).

pi passes the file's text through two regular expressions, then ``JSON.parse``:

1. ``"(?:\\.|[^"\\])*"|//[^\n]*``: a string literal is kept, a ``//`` comment (to the end of its line) removed;
2. ``"(?:\\.|[^"\\])*"|,(\s*[}\]])``: a string literal is kept, a comma before ``}`` or ``]`` (across
   JavaScript whitespace) removed.

So ``//`` comments and trailing commas are accepted, and ``/* */`` comments are not (the file then fails to
parse, and pi ignores it whole). ``loads_pi_json`` gives the same text to ``json.loads`` with JavaScript's
differences kept: no ``NaN``/``Infinity``, and a byte-order mark is an error.

A backtracking engine runs those expressions in quadratic time on hostile text (every unclosed quote or
comment scans to the end of the file); ``strip_pi_json`` produces the same text with each character looked at
a bounded number of times. What makes that possible: a string literal that does not close fails at one point
(the end of the text, or a backslash before a line end), and every quote it passed over was escaped, so each of
those fails at the same point; it is remembered instead of scanned again.
"""

from __future__ import annotations

import json
import re
from typing import Any

# What JavaScript's ``.`` does not match (an escape's second character cannot be one) and what ``\s`` matches.
_LINE_ENDS = frozenset("\n\r\u2028\u2029")
_JS_SPACE = frozenset("\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"
                      + "".join(chr(c) for c in range(0x2000, 0x200B)))
_QUOTE_OR_SLASH = re.compile(r'["/]')
_QUOTE_OR_COMMA = re.compile(r'[",]')
_QUOTE_OR_BACKSLASH = re.compile(r'["\\]')


def loads_pi_json(text: str) -> Any:
    """``text`` as pi reads a ``models.json``: comments and trailing commas stripped, then ``JSON.parse``'s
    rules. Raises ``json.JSONDecodeError`` (``ValueError``) or ``RecursionError`` as ``json.loads`` does."""
    stripped = strip_pi_json(text)
    return json.loads(stripped, parse_constant=lambda name: _refuse_constant(name, stripped))


def strip_pi_json(text: str) -> str:
    """``text`` after pi's two passes: ``//`` comments, then commas before ``}``/``]``, removed outside strings."""
    return _drop_trailing_commas(_drop_line_comments(text))


class _Strings:
    """Where the string literal opening at a quote ends (as ``"(?:\\.|[^"\\])*"`` matches), remembering the
    point an unclosed one failed at so that the quotes it passed over are not scanned again."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._failed_until = -1

    def end(self, start: int) -> int | None:
        """The index after the closing quote of the literal opening at ``start``; None when it does not close."""
        if start < self._failed_until:
            return None
        text, at = self._text, start + 1
        while True:
            found = _QUOTE_OR_BACKSLASH.search(text, at)
            if found is None:
                self._failed_until = len(text)
                return None
            at = found.start()
            if text[at] == '"':
                return at + 1
            if at + 1 >= len(text) or text[at + 1] in _LINE_ENDS:
                self._failed_until = at
                return None
            at += 2


def _drop_line_comments(text: str) -> str:
    out: list[str] = []
    strings = _Strings(text)
    kept_from = at = 0
    while (found := _QUOTE_OR_SLASH.search(text, at)) is not None:
        at = found.start()
        if text[at] == '"':
            end = strings.end(at)
            at = end if end is not None else at + 1
        elif text.startswith("//", at):
            out.append(text[kept_from:at])
            newline = text.find("\n", at)
            kept_from = at = len(text) if newline < 0 else newline
        else:
            at += 1
    out.append(text[kept_from:])
    return "".join(out)


def _drop_trailing_commas(text: str) -> str:
    out: list[str] = []
    strings = _Strings(text)
    kept_from = at = 0
    while (found := _QUOTE_OR_COMMA.search(text, at)) is not None:
        at = found.start()
        if text[at] == '"':
            end = strings.end(at)
            at = end if end is not None else at + 1
            continue
        after = at + 1
        while after < len(text) and text[after] in _JS_SPACE:
            after += 1
        if after < len(text) and text[after] in "}]":
            out.append(text[kept_from:at])
            kept_from, at = at + 1, after + 1
        else:
            at += 1
    out.append(text[kept_from:])
    return "".join(out)


def _refuse_constant(name: str, text: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are Python's extensions; ``JSON.parse`` refuses them."""
    position = text.find(name)
    raise json.JSONDecodeError(f"{name} is not JSON", text, max(position, 0))


__all__ = ["loads_pi_json", "strip_pi_json"]
