"""The tagged blocks a summary ends with, and how their content is quoted as data (pure).

Everything the code adds to a summary stands after the model's prose as a block: an opening tag alone
on its line (``<user-messages>``), one item per line, the closing tag alone on its line. pi's
``<read-files>``/``<modified-files>`` are blocks of this shape. An item comes from the session (what a
user typed, a command, an error, a path), so it is written so that it can only be read as data:

- ``quote``: a JSON string (double quotes, ``\\n`` for a newline), with every character that could end
  a line or hide text (control, format and line-separator characters) escaped as ``\\uXXXX`` and ``</``
  written ``<\\/``; an item can therefore never span two lines, never be a line of its own that closes
  the block, and never start a line with ``## ``;
- ``clean``: the same escapes for a line of our own words that holds quoted parts.

``strip_blocks`` removes the blocks of the given tags (a model that copied one from the previous
summary, or a summary read for its prose only: "model only" is a summary without any block).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence

# Characters that break or hide a line: C0/C1 controls, format characters (bidi overrides, zero-width),
# line and paragraph separators, lone surrogates. ``str.splitlines`` breaks at several of them.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_TAG = re.compile(r"^[a-z][a-z0-9-]*$")


def _escape(char: str) -> str:
    return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else char.encode("unicode_escape").decode("ascii")


def clean(text: str) -> str:
    """``text`` with every line-breaking or hiding character escaped and ``</`` written ``<\\/``."""
    if text.isprintable() and "</" not in text:
        return text  # the common case: nothing to escape (``isprintable`` is false for all unsafe ones)
    out = "".join(_escape(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c for c in text)
    return out.replace("</", "<\\/")


def quote(text: str) -> str:
    """``text`` as one JSON string on one line, safe inside a block (see the module's contract)."""
    return clean(json.dumps(text, ensure_ascii=False))


def is_clean(text: str) -> bool:
    """Can ``text`` stand on a line of a block as it is (a plain path: no escapes, no quote, no padding)?"""
    return bool(text) and clean(text) == text and text == text.strip() and not text.startswith(('"', "<"))


def format_block(tag: str, lines: Sequence[str]) -> str:
    """``<tag>``, the ``lines`` (each already quoted or clean), ``</tag>``."""
    assert _TAG.match(tag), tag
    return "\n".join([f"<{tag}>", *lines, f"</{tag}>"])


def strip_blocks(summary: str, tags: Iterable[str]) -> str:
    """``summary`` without its blocks of ``tags`` (and the blank lines before each); an opening tag
    without its closing tag is left as it is."""
    names = "|".join(re.escape(tag) for tag in tags)
    if not names:
        return summary
    block = re.compile(rf"\n*^<({names})>\n(?:.*\n)*?</\1>$\n?", re.MULTILINE)
    stripped = block.sub("", summary)
    return stripped if stripped != summary else summary


def block_lines(summary: str, tag: str) -> list[str] | None:
    """The lines of the first ``tag`` block of ``summary`` (None: it has none)."""
    lines = summary.splitlines()
    if f"<{tag}>" not in lines:
        return None
    start = lines.index(f"<{tag}>") + 1
    try:
        return lines[start : lines.index(f"</{tag}>", start)]
    except ValueError:
        return None


__all__ = ["block_lines", "clean", "format_block", "is_clean", "quote", "strip_blocks"]
