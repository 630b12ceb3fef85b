"""Which lines of a long output the user's question names (pure).

A question's specific terms are its words that are neither common words nor the routine of asking
("read", "tell", "quote", "line"), and its numbers, each only together with the word beside it in the
question: "meeting 137" finds "## Meeting 137", never line 137 of a ``read`` (a line-number column is
position, not text) nor "Ticket 137". A word matches where a word starts, by its stem ("decided" finds
"Decided", "decision" not). In one output, a term weighs by how few of its lines hold it; a line is
evidence with a number's phrase, two terms, or one term found on at most ``RARE_LINES`` lines: one
common word ("meeting" on every heading) is not.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pi_compact.session.terms import COMMON

# Words with which a question asks, points at its source or doubts an answer, not what it is about.
ROUTINE = frozenset("""
read open look check see show tell quote cite say line lines file files output text content contents sure
really right correct true wrong verify confirm source where which word words part parts whole full
""".split())
LOOK_BACK = 3  # earlier user messages a follow-up looks back through for the question it follows up
# A message that doubts an answer or asks for its source: it is about the question before it.
FOLLOW_UP = re.compile(r"\b(?:sure|quote|cite|source|verify|confirm|really|certain|prove|evidence)\b", re.IGNORECASE)
PHRASE_WEIGHT = 3.0  # a number with its word names one thing; a word names many
RARE_LINES = 2
COMMON_SHARE = 0.2  # a term on more than this share of the lines is common there, and left out
MAX_TERMS = 12  # of each kind
RELATIVE_FLOOR = 0.25  # a line scoring under this share of the best one is noise beside it
_TOKEN = re.compile(r"[A-Za-z_][\w.\-/]*\w|[A-Za-z_]|\d+(?:[.,:]\d+)*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# A line-number column as ``read`` and ``cat -n`` print it (digits, then a tab), or as ``grep -n`` does
# (``path:12:`` or ``12:``).
_LINE_NUMBER = re.compile(r"^\s*\d+\t|^(?:[^\s:]+:)?\d+[:-](?=\s|$)")
_SUFFIXES = ("ied", "ies", "ing", "ure", "ed", "es", "s")


def stem(word: str) -> str:
    """``word`` (lower case) cut to a root its other forms contain: "retries" and "retry" give "retr",
    "failing" and "failure" "fail", "tracked" "track". Crude, but only ever used as a substring."""
    for suffix in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        if suffix == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
            suffix = "s"  # "files" is "file" + "s"
        if suffix == "s" and word.endswith(("ss", "us")):
            break
        root = word[: -len(suffix)]
        if suffix in ("ing", "ed") and len(root) >= 4 and root[-1] == root[-2] and root[-1] not in "aeiou":
            root = root[:-1]  # "running" -> "run"
        word = root
        break
    return word[:-1] if len(word) > 4 and word[-1] in "eiy" else word


def line_content(line: str) -> str:
    """``line`` without a leading line-number column."""
    first = line[:1]
    if not first or not (first.isdigit() or first.isspace() or ":" in line[:256]):
        return line  # the usual line: no regular expression
    return _LINE_NUMBER.sub("", line, count=1)


def is_number(term: str) -> bool:
    """A term that is only a number ("137", "0.35", "12:30"): no evidence of a topic by itself."""
    return _NUMBER.fullmatch(term) is not None


def number_phrases(text: str) -> tuple[str, ...]:
    """Each number of ``text`` with the word before it (else the word after it), lower case, as the
    question says them ("meeting 137"); a number with no word beside it names nothing."""
    tokens = _TOKEN.findall(text)
    phrases: list[str] = []
    for i, token in enumerate(tokens):
        if not is_number(token):
            continue
        before = tokens[i - 1] if i > 0 else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        word = next((w for w in (before, after) if w and not is_number(w) and w.lower() not in COMMON), "")
        if word:
            phrases.append(f"{word} {token}".lower() if word == before else f"{token} {word}".lower())
    return tuple(dict.fromkeys(phrases))


@dataclass(frozen=True)
class Focus:
    """What a question names: word ``stems`` and number ``phrases`` (lower case)."""

    stems: tuple[str, ...]
    phrases: tuple[str, ...]

    @classmethod
    def of(cls, question: str) -> Focus | None:
        """The specific terms of ``question``; None when it has none."""
        words = [t.lower() for t in _TOKEN.findall(question) if not is_number(t)]
        stems = [stem(w) for w in words if len(w) > 2 and w not in COMMON and w not in ROUTINE]
        # A pasted log is no question about one thing: its first terms stand for it.
        focus = cls(tuple(dict.fromkeys(s for s in stems if len(s) > 2))[:MAX_TERMS],
                    number_phrases(question)[:MAX_TERMS])
        return focus if focus.stems or focus.phrases else None

    @property
    def terms(self) -> tuple[str, ...]:
        return self.phrases + self.stems


def follows_up(text: str) -> bool:
    """Whether ``text`` doubts an answer or asks for its source ("Are you sure? Quote the line ...") and
    names fewer than two specific terms of its own: what it is about is the question before it."""
    focus = Focus.of(text)
    return FOLLOW_UP.search(text) is not None and (focus is None or len(focus.terms) < 2)


@lru_cache(maxsize=256)
def _pattern(term: str, phrase: bool) -> re.Pattern[str]:
    if phrase:  # "meeting 137" as "Meeting 137", "meeting #137" or "meeting-137", never "meeting 1370"
        first, second = term.split(" ", 1)
        return re.compile(r"(?<![\w-])" + re.escape(first) + r"[\s#:_-]{1,3}" + re.escape(second) +
                          r"(?![\w]|[.,:]\d)", re.IGNORECASE)
    return re.compile(r"(?<![\w])" + re.escape(term), re.IGNORECASE)


def scored_lines(focus: Focus, lines: Sequence[str]) -> dict[int, float]:
    """The lines of ``lines`` that are evidence of what ``focus`` names (index: score), each term weighed
    by how few lines hold it; lines under ``RELATIVE_FLOOR`` of the best are left out."""
    # Per term, a plain search of the lowered text that stops at the first hit of each line, and at the
    # first line past the share that makes it common; then the term is checked on the lines it hit only,
    # without their line-number column. The status line asks for the cut often; a regular expression over a
    # megabyte of log took 40 ms a term.
    lowered = "\n".join(lines).lower()
    starts = [0]
    for line in lowered.split("\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    limit = max(RARE_LINES, int(COMMON_SHARE * len(lines)))
    held: dict[int, list[tuple[float, bool]]] = {}  # per line: each term's weight, and whether it is strong
    for term, phrase in [(p, True) for p in focus.phrases] + [(s, False) for s in focus.stems]:
        pattern = _pattern(term, phrase)
        needle = next(part for part in term.split(" ") if is_number(part)) if phrase else term  # the rarer part
        hit: list[int] = []
        at = lowered.find(needle)
        while at >= 0 and len(hit) <= limit:
            hit.append(bisect_right(starts, at) - 1)
            at = lowered.find(needle, starts[hit[-1] + 1]) if hit[-1] + 1 < len(starts) else -1
        if len(hit) > limit:
            continue  # common here (every line of a log names it): it tells no line from another
        where = [i for i in hit if pattern.search(line_content(lines[i]))]
        if not where:
            continue
        weight = math.log(1 + len(lines) / len(where)) * (PHRASE_WEIGHT if phrase else 1.0)
        strong = phrase or len(where) <= RARE_LINES
        for i in where:
            held.setdefault(i, []).append((weight, strong))
    scores = {i: sum(w for w, _ in terms) for i, terms in held.items()
              if len(terms) >= 2 or any(strong for _, strong in terms)}
    best = max(scores.values(), default=0.0)
    return {i: s for i, s in scores.items() if s >= RELATIVE_FLOOR * best}


@lru_cache(maxsize=8)
def found_spans(question: str, output: str) -> tuple[tuple[int, int, float], ...]:
    """``spans`` of the lines of ``output`` that ``question`` names (none when it names nothing), kept for
    the next call: the status line asks for the same cut again and again."""
    focus = Focus.of(question)
    lines = output.split("\n")
    return tuple(spans(scored_lines(focus, lines), len(lines))) if focus is not None else ()


def spans(scores: dict[int, float], total: int, around: int = 2, join: int = 6) -> list[tuple[int, int, float]]:
    """The lines of ``scores`` with ``around`` lines either side, spans closer than ``join`` lines made
    one: (first, last, score of its best line), best first."""
    merged: list[list[float]] = []
    for i in sorted(scores):
        first, last = max(0, i - around), min(total - 1, i + around)
        if merged and first - int(merged[-1][1]) <= join:
            merged[-1][1] = max(merged[-1][1], last)
            merged[-1][2] = max(merged[-1][2], scores[i])
        else:
            merged.append([first, last, scores[i]])
    return sorted(((int(a), int(b), s) for a, b, s in merged), key=lambda span: (-span[2], span[0]))


__all__ = ["ROUTINE", "Focus", "found_spans", "is_number", "line_content", "number_phrases", "scored_lines", "spans",
           "stem"]
