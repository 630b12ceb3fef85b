"""Text as it will run, made visible for a question: hidden characters marked, look-alike letters flagged (pure).

Contract:
- ``reveal(line, style)`` is one line (no newline in it) as rich ``Text``: every character that shows
  nothing, moves other text or cannot be printed (controls but tab, bidirectional and zero-width
  characters, spaces other than the plain one, invisible letters, lone surrogates) becomes a marker such
  as ``⟨U+202E⟩`` in reverse video; a run of 40 or more spaces becomes ``⟨N spaces⟩``; the letters that
  make a word mix writing systems (``gіthub.com`` with a Cyrillic ``і``) are shown in reverse video.
- ``warnings(text)`` says in words what was marked: how many hidden characters, and each word that mixes
  writing systems with its foreign letters named (``U+0456 CYRILLIC SMALL LETTER …``).
Nothing is removed: the marks stand for characters that are in what runs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from rich.text import Text

HIDDEN_STYLE = "bold reverse red"
FOREIGN_STYLE = "bold reverse yellow"
SPACE_RUN = 40  # a run this long is counted, not drawn: it could push the rest of a line out of sight
MAX_WORDS = 5  # mixed-script words named in the warnings

# Letters that draw nothing (Hangul fillers, the braille blank, the combining grapheme joiner) although
# Python calls them printable; every other hidden character is one ``str.isprintable`` rejects.
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]| {" + str(SPACE_RUN) + ",}")
_ODD = re.compile(r"[^\t\n\x20-\x7e]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_JOINERS = frozenset("_.-@/:")  # a word for the script check: letters, digits and what joins host names and paths
_ONE_FAMILY = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK", "IDEOGRAPHIC": "CJK", "HALFWIDTH": "CJK"}


def hidden(char: str) -> bool:
    """Whether ``char`` shows nothing or changes how other characters show."""
    return char in _INVISIBLE_LETTERS or (char not in "\t\n" and not char.isprintable())


def marker(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


def _script(char: str) -> str | None:
    """The writing system of a letter, by the first word of its Unicode name (None: not a letter)."""
    if not char.isalpha():
        return None
    try:
        first = unicodedata.name(char).split()[0]
    except ValueError:
        return "UNKNOWN"
    return _ONE_FAMILY.get(first, first)


def _word(char: str) -> bool:
    return char.isalnum() or char in _JOINERS


def _words_with_non_ascii(text: str) -> Iterator[tuple[int, int]]:
    """The spans of the words holding a non-ASCII character, found in one pass (a regex that looked for
    them would backtrack over every long ASCII word: quadratic in a padded line)."""
    end = 0
    for found in _NON_ASCII.finditer(text):
        if found.start() < end:
            continue  # inside the word just yielded
        start = found.start()
        while start > end and _word(text[start - 1]):
            start -= 1
        end = found.end()
        while end < len(text) and _word(text[end]):
            end += 1
        yield start, end


def _mixed_words(text: str) -> Iterator[tuple[int, int]]:
    """Words whose letters come from more than one writing system, or a dotted name (a host) with
    letters outside Latin: where a look-alike letter can pass for the one the user expects."""
    for start, end in _words_with_non_ascii(text):
        word = text[start:end]
        scripts = {s for s in map(_script, word) if s is not None}
        if len(scripts) > 1 or ("." in word and scripts - {"LATIN"}):
            yield start, end


def _foreign(char: str) -> bool:
    return not char.isascii() and char.isalpha()


def reveal(line: str, style: str = "") -> Text:
    """``line`` with its hidden characters marked and its mixed-script letters highlighted."""
    out = Text(style=style)
    flagged = {i for start, end in _mixed_words(line) for i in range(start, end) if _foreign(line[i])}
    at = 0
    for match in _SUSPECT.finditer(line):
        start = match.start()
        out.append(line[at:start])
        at = match.end()
        found = match.group()
        if found.startswith(" "):
            out.append(f"⟨{len(found)} spaces⟩", style=HIDDEN_STYLE)
        elif hidden(found):
            out.append(marker(found), style=HIDDEN_STYLE)
        else:
            out.append(found, style=FOREIGN_STYLE if start in flagged else "")
    out.append(line[at:])
    return out


def warnings(text: str) -> list[str]:
    """What ``reveal`` marked in ``text``, in words (empty when nothing was)."""
    notes: list[str] = []
    count = sum(1 for found in _ODD.finditer(text.replace("\r\n", "\n")) if hidden(found.group()))
    if count:
        notes.append(f"{count} hidden character{'' if count == 1 else 's'} (control, zero-width, bidirectional "
                     "or unusual spaces), shown as ⟨U+…⟩")
    words = list(_mixed_words(text))
    for start, end in words[:MAX_WORDS]:
        letters = dict.fromkeys(char for char in text[start:end] if _foreign(char))
        named = ", ".join(f"{char} U+{ord(char):04X} {unicodedata.name(char, '?')}" for char in letters)
        shown = "".join(marker(c) if hidden(c) else c for c in text[start:end])
        notes.append(f'"{shown}" mixes writing systems (look-alike letters?): {named}')
    if len(words) > MAX_WORDS:
        notes.append(f"… and {len(words) - MAX_WORDS} more words that mix writing systems")
    return notes


__all__ = ["FOREIGN_STYLE", "HIDDEN_STYLE", "hidden", "marker", "reveal", "warnings"]
