"""The terms a search looks for in a text (pure): exact ones and plain words.

Exact terms are quoted phrases and identifiers written as code (``NEEDLE-3``, ``src/app.py``,
``max_retries``, ``refillTokensLocked``, ``54317``); they match only as whole tokens, so ``NEEDLE-3``
never finds ``NEEDLE-30`` or ``NEEDLE-0``. Plain words are the rest, minus common words; they match as
substrings of lower-cased text ("deploy" finds "deployed").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_QUOTED = re.compile(r'"([^"\n]{2,200})"|`([^`\n]{2,200})`|(?<!\w)\'([^\'\n]{2,200})\'(?!\w)')
_TOKEN = re.compile(r"[\w][\w.\-/:]*[\w]|\w")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
# Words that say nothing about which message is meant.
COMMON = frozenset("""
a an and any are as at be but by can did do does for from had has have how i in is it its me my no not of on
or our so than that the their them then there these they this to up us was we were what when where which who
why will with you your about after again all also been before being both could each few here into just more
most much must never now once only other over same should some such very would value values said says tell
told know remember recall find show give exact exactly again please message messages earlier before agreed
""".split())


@dataclass(frozen=True)
class Terms:
    """What to look for: ``exact`` terms (whole tokens) and ``plain`` words (substrings), all lower case."""

    exact: tuple[str, ...]
    plain: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return self.exact + self.plain


# One notion of "written as code", in two strengths: what a summary must keep (``is_identifier``, strict:
# "well-known" and "e.g" are prose) and what a search matches whole (``is_exact``, which adds any joined
# token and bare numbers: matching prose whole costs nothing, and "--dry-rotate" is a flag).
def is_identifier(token: str) -> bool:
    """A token written as code rather than prose: ``_``, letters with digits, an inner capital, a dotted
    name (not "e.g"), or a hyphenated one with a capital (ticket ids; "well-known" is prose)."""
    if "_" in token or _INNER_CAPITAL.search(token):
        return True
    if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return True
    if "." in token and any(len(part) > 1 for part in token.split(".")) and "-" not in token:
        return True
    return "-" in token and any(c.isupper() for c in token)


def is_exact(token: str) -> bool:
    """A token a search matches whole: an identifier, any token joined by ``-`` ``.`` ``/`` ``_`` ``:``,
    or a number of two or more digits."""
    if any(c in token for c in "-./_:") and len(token) > 2:
        return True
    if token.isdigit():
        return len(token) > 1
    return is_identifier(token)


def parse_terms(text: str) -> Terms:
    """The terms of a query: quoted phrases and code-like tokens exact, other words of three or more
    letters plain (common words only when nothing else is left)."""
    exact: list[str] = []
    rest = text
    for match in _QUOTED.finditer(text):
        phrase = next(group for group in match.groups() if group is not None).strip()
        if phrase:
            exact.append(phrase.lower())
        rest = rest.replace(match.group(0), " ")
    plain: list[str] = []
    common: list[str] = []
    for token in _TOKEN.findall(rest):
        token = token.strip(".:/-")
        if not token:
            continue
        if is_exact(token):
            exact.append(token.lower())
        elif len(token) > 2:
            (common if token.lower() in COMMON else plain).append(token.lower())
    if not exact and not plain:
        plain = common
    return Terms(tuple(dict.fromkeys(exact)), tuple(dict.fromkeys(plain)))


@lru_cache(maxsize=1024)
def whole(term: str) -> re.Pattern[str]:
    """``term`` (lower case) as a whole token of lower-cased text: not inside a longer word, number or id."""
    return re.compile(r"(?<![\w\-])" + re.escape(term) + r"(?![\w\-]|[./:]\w)")


def has_term(lowered: str, term: str, exact: bool) -> bool:
    """True when lower-cased ``lowered`` holds ``term`` (a whole token when ``exact``)."""
    if term not in lowered:  # the cheap test first: most texts lack the term altogether
        return False
    return not exact or whole(term).search(lowered) is not None


__all__ = ["COMMON", "Terms", "has_term", "is_exact", "is_identifier", "parse_terms", "whole"]
