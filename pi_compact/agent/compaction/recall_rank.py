"""Automatic recall's ranking: which lines of the compacted originals a question names (pure).

A term weighs by how rare it is among the compacted messages (an inverse document frequency): "test"
or "run", found in every tool result, say little; ``shard_weight``, found in one, says much. Identical
tool outputs (one file read five times) count as one. Exact
terms (identifiers, paths, numbers, quoted phrases: ``session.terms``; a number with the word beside it
in the question, "meeting 137": ``compaction.focus``) match whole and weigh
``EXACT_WEIGHT`` times a word; words match by their stem where a word starts or ends ("failing" finds
"FAILED", "error" ``KeyError``, "name" not ``__name__``). Each message is shown by its best window of
lines, and a window counts only with a distinctive term in it, never with common words alone, nor
with a number alone (a line-number column is not text at all), nor when it holds under half of what
its message matches (a stray mention), nor, for a follow-up that borrows the previous question's terms,
when it holds under half of that question's topic words. A question about an error prefers the lines
that hold error text, a "why" question the lines that give a reason. What a "do not ..." clause names
("do not run commands") is what the user does not want, so it is not looked for.
"""

from __future__ import annotations

import math
import random
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from pi_compact.compaction.focus import ROUTINE, is_number, line_content, number_phrases, stem
from pi_compact.session.history import excerpt
from pi_compact.session.terms import COMMON, has_term, parse_terms

EXACT_WEIGHT = 3.0
# A word in more than this share of the compacted messages (and in more than two) is common here.
COMMON_SHARE = 0.2
WINDOW_CHARS = 480  # about 120 tokens of lines around the best one
# A window must hold at least this share of the weight of the question's terms its message holds.
SUPPORT_SHARE = 0.5
NEAR_LINES = 8  # a window is looked for around the best lines, this many lines either side
BEST_LINES = 8  # of the lines holding a term, this many best are looked around
RELATIVE_FLOOR = 0.5  # a window scoring under half the best one is noise beside it
CANDIDATES = 64  # messages read line by line for their best window
SAMPLE = 4000  # messages: beyond twice this many, common words are told by a sample
MAX_TERMS = 12  # of each kind: a pasted log names too much to be a question about one thing
RARE = 1  # a term in only this many compacted messages is evidence on its own
# Words with which a question points at the conversation or the job itself, not at a topic in it.
META = frozenset({"session", "history", "conversation", "chat", "answer", "question", "work", "task", "thing"})
# What a question asks for beyond its words, and what lines that answer it look like: something that
# went wrong (error text in a log), and a reason.
_ASKS_ERROR = re.compile(r"\b(?:errors?|exceptions?|traceback|fail\w*|crash\w*|panic\w*|broke\w*|wrong)\b")
# Error text as tools print it, not prose that mentions a failure ("the suite failed once").
_ERROR_LINE = re.compile(
    r"[a-z](?:Error|Exception)\b|(?i:\b(?:error|fatal|panic)(?:\[[\w-]+\])?:)|\b(?:ERROR|FAILED|FAIL|FATAL)\b"
    r"|^E {2,}\S|^Traceback \(most recent call last\)|^\s*× "
)
_ASKS_REASON = re.compile(r"\b(?:why|reasons?)\b")
_REASON_LINE = re.compile(r"\b(?:because|since|so that|due to|reasons?)\b", re.IGNORECASE)
# An instruction not to do something, up to the end of its clause.
_DO_NOT = re.compile(r"(?:^|(?<=[.;:!?,]))\s*(?:please\s+)?(?:do not|don't|never)\b[^.;:!?]*", re.IGNORECASE)
@dataclass(frozen=True)
class Question:
    """What a message asks about: ``exact`` terms (whole tokens) and word ``stems``, all lower case."""

    exact: tuple[str, ...]
    stems: tuple[str, ...]
    wants: tuple[re.Pattern[str], ...] = ()  # lines that answer what it asks for (error text, a reason)
    borrowed: bool = False  # a follow-up's, with the terms of the question before it (``recall.follow_up``)

    @classmethod
    def of(cls, text: str) -> Question | None:
        """The question in ``text``; None when it names nothing (common words, or a single plain word)."""
        # A number with the word beside it ("meeting 137") is one exact term besides the number itself.
        exact = tuple(dict.fromkeys(number_phrases(text) + parse_terms(text).exact))
        terms = parse_terms(_DO_NOT.sub(" ", text))
        words = [w for w in terms.plain if w not in COMMON and w not in META]
        if not exact and len(words) < 2:
            return None  # one word is no evidence of a compacted fact
        stems = dict.fromkeys(stem(w) for w in words[:MAX_TERMS])
        lowered = text.lower()
        wants = tuple(line for asks, line in ((_ASKS_ERROR, _ERROR_LINE), (_ASKS_REASON, _REASON_LINE))
                      if asks.search(lowered))
        return cls(exact[:MAX_TERMS], tuple(stems), wants)

    @property
    def terms(self) -> tuple[tuple[str, bool], ...]:
        """Every term with whether it matches whole."""
        return tuple((t, True) for t in self.exact) + tuple((s, False) for s in self.stems)


@dataclass(frozen=True)
class Weights:
    """Each term's weight over one set of compacted messages (a term found in none is left out), and
    which of those messages hold a distinctive term: the only ones worth a look."""

    weight: dict[tuple[str, bool], float]
    distinctive: frozenset[tuple[str, bool]]
    rare: frozenset[tuple[str, bool]]
    exact_found: bool  # some exact term of the question occurs: then a window must hold one
    candidates: tuple[int, ...]  # positions in the texts weighed, best first

    @classmethod
    def over(cls, question: Question, lowered_texts: Sequence[str], copies: Sequence[bool] = ()) -> Weights:
        """The weights over ``lowered_texts``; ``copies`` says, per text, whether it reproduces an original
        outside the conversation (a tool's output: a file read, a command's output): identical ones of
        those count once. Said again by the user or the model, words are routine, and so common."""
        # This runs before every request after a compaction, over everything compacted: one scan per term,
        # the substring test first. In a big session a word that a sample shows to be common everywhere is
        # counted from the sample alone (it can only weigh little and bring no candidate).
        # Copies of one original (the same file read five times) are one document: counted apart, the
        # facts they hold would look common and weigh nothing. Each distinct copy counts at its newest.
        newest: dict[str | int, int] = {}
        for i, text in enumerate(lowered_texts):
            newest[text if i < len(copies) and copies[i] else i] = i
        positions = sorted(newest.values())
        texts = [lowered_texts[i] for i in positions]
        total = max(1, len(texts))
        # A seeded draw, not every n-th message: a session's roles repeat in a fixed order.
        sample = random.Random(total).sample(texts, SAMPLE) if total > 2 * SAMPLE else []
        where: dict[tuple[str, bool], list[int]] = {}
        found: dict[tuple[str, bool], int] = {}
        for term in question.terms:
            if sample and not term[1]:
                seen = sum(1 for text in sample if term[0] in text and holds(text, *term))
                if seen > 2 * SAMPLE * COMMON_SHARE:
                    found[term], where[term] = seen * total // SAMPLE, []
                    continue
            where[term] = [positions[i] for i, text in enumerate(texts) if term[0] in text and holds(text, *term)]
            if where[term]:
                found[term] = len(where[term])
        weight = {term: math.log(1 + total / n) * (EXACT_WEIGHT if term[1] else 1.0) for term, n in found.items()}
        distinctive = frozenset(t for t, n in found.items() if t[1] or n <= max(RARE, total * COMMON_SHARE))
        # The messages with a distinctive term, by the weight of all the terms they hold (newer first among
        # equals); only the best few are read line by line.
        held: dict[int, float] = {}
        for term in found:
            for i in where[term]:
                held[i] = held.get(i, 0.0) + weight[term]
        named = {i for term in distinctive for i in where[term]}
        candidates = sorted(named, key=lambda i: (held[i], i), reverse=True)[:CANDIDATES]
        return cls(weight, distinctive, frozenset(t for t, n in found.items() if n <= RARE),
                   any(exact for _, exact in found), tuple(candidates))

    def matched(self, lowered: str) -> list[tuple[str, bool]]:
        return [term for term in self.weight if holds(lowered, *term)]


def holds(lowered: str, term: str, exact: bool) -> bool:
    """Whether lower-cased text holds ``term``: an exact one as a whole token; a stem where a word starts,
    or where one ends ("error" in ``KeyError``, "tenant" in ``retry_tenant``), not inside ("name" in
    ``__name__``)."""
    if exact:
        return has_term(lowered, term, exact)
    at = lowered.find(term)
    while at >= 0:
        end = at + len(term)
        if at == 0 or not _in_word(lowered[at - 1]) or end == len(lowered) or not _in_word(lowered[end]):
            return True
        at = lowered.find(term, at + 1)
    return False


def _in_word(char: str) -> bool:
    return char.isalnum() or char == "_"


@dataclass(frozen=True)
class Window:
    """The best lines of one message for a question, and how well they answer it."""

    text: str
    score: float


def best_window(question: Question, weights: Weights, text: str) -> Window | None:
    """The window of ``text`` (original case) around its best line, or None when no window of it
    holds the evidence a hit needs: a distinctive term (an exact one when any occurs), and beside it a
    second term, a line of what the question asks for (error text, a reason), or a rare term.

    Terms are matched in each line's content: a line-number column (``read``, ``cat -n``, ``grep -n``)
    is position, not text, and a number counts only on a line that also holds another of the question's
    terms ("meeting 137" finds "## Meeting 137", not line 137 nor "budget line 137")."""
    lines = text.split("\n")
    per_line = _terms_by_line(weights, text, lines)
    top = max(weights.weight.values(), default=0.0)
    signs = [_signs(question, line, top) for line in lines] if question.wants else [0.0] * len(lines)
    scored = [sum(weights.weight[t] for t in terms) + sign for terms, sign in zip(per_line, signs, strict=True)]
    if max(scored, default=0.0) <= 0:
        return None
    # The best window, not the window around the best line: a heading that names "meeting 137" and the
    # line under it that names the codename are one answer, which a window centred on either may cut.
    # Around the best few lines only: a term found on every heading would make every line a center.
    best_lines = sorted((i for i, score in enumerate(scored) if score > 0), key=lambda i: -scored[i])[:BEST_LINES]
    near = {j for i in best_lines for j in range(max(0, i - NEAR_LINES), min(len(lines), i + NEAR_LINES + 1))}
    best, first, last, value = -1, 0, 0, (-1.0, -1.0)
    for center in sorted(near):
        span = _span(lines, center)
        held = {t for i in range(span[0], span[1] + 1) for t in per_line[i]}
        sign = max(signs[span[0] : span[1] + 1])
        candidate = (sum(weights.weight[t] for t in held) + sign, scored[center])
        if candidate > value:
            best, (first, last), value = center, span, candidate
    shown = _shown(lines, best, first, last, question, weights)
    terms = list(dict.fromkeys(t for i in range(first, last + 1) for t in per_line[i]))
    answers = any(want.search(line) for want in question.wants for line in shown.split("\n"))
    if not any(t in weights.distinctive for t in terms):
        return None
    if weights.exact_found and not any(exact for _, exact in terms):
        return None
    if len(terms) < 2 and not answers and not weights.exact_found and not weights.rare.intersection(terms):
        return None
    if question.borrowed and not _covers(question, terms):
        return None
    score = sum(weights.weight[t] for t in terms)
    if score < SUPPORT_SHARE * sum(weights.weight[t] for t in set().union(*per_line)):
        return None  # a stray mention: most of what the question names, and this message holds, is elsewhere
    return Window(shown, score * 2 if answers else score)


_ROUTINE_STEMS = frozenset(stem(word) for word in ROUTINE)


def _covers(question: Question, terms: Sequence[tuple[str, bool]]) -> bool:
    """Whether ``terms`` (a window's) hold at least half of ``question``'s topic words: a follow-up asks
    for proof of one answer, which a window holding only the question's topic ("Meeting 137" without a
    codename) is not."""
    wanted = [s for s in question.stems if s not in _ROUTINE_STEMS]
    held = {term for term, exact in terms if not exact}
    return 2 * sum(1 for s in wanted if s in held) >= len(wanted)


def line_terms(weights: Weights, content: str) -> list[tuple[str, bool]]:
    """The question's terms in one line's lower-cased content; its numbers only beside another term."""
    terms = weights.matched(content)
    if all(is_number(term) for term, _ in terms):
        return []
    return terms


def _terms_by_line(weights: Weights, text: str, lines: Sequence[str]) -> list[list[tuple[str, bool]]]:
    """``line_terms`` of each line, read only on the lines where a term's text occurs (found in the
    whole text first: most lines of a long output hold none)."""
    lowered = text.lower()
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    candidates: set[int] = set()
    for term, _ in weights.weight:
        at = lowered.find(term)
        while at >= 0:
            index = bisect_right(starts, at) - 1
            candidates.add(index)
            at = lowered.find(term, starts[index + 1] if index + 1 < len(starts) else len(lowered))
    per_line: list[list[tuple[str, bool]]] = [[] for _ in lines]
    for index in candidates:
        per_line[index] = line_terms(weights, line_content(lines[index]).lower())
    return per_line


def _signs(question: Question, line: str, top: float) -> float:
    """For each of up to two signs of what the question asks for in ``line`` (``FAILED``, ``KeyError``),
    the ``top`` weight of a term: the error line itself may hold none of the question's words."""
    return min(2, sum(len(want.findall(line)) for want in question.wants)) * top


def _span(lines: Sequence[str], center: int) -> tuple[int, int]:
    """The first and last line of the window around ``center``: its neighbours, alternately before and
    after, up to ``WINDOW_CHARS`` (only itself when it is that long alone)."""
    first = last = center
    size = len(lines[center])
    grew = size <= WINDOW_CHARS
    while grew:
        grew = False
        for index in (first - 1, last + 1):
            if 0 <= index < len(lines) and size + len(lines[index]) + 1 <= WINDOW_CHARS:
                size += len(lines[index]) + 1
                first, last = min(first, index), max(last, index)
                grew = True
    return first, last


def _shown(lines: Sequence[str], center: int, first: int, last: int, question: Question, weights: Weights) -> str:
    """The lines ``first``..``last`` as shown; a ``center`` line longer than ``WINDOW_CHARS`` is cut around
    its heaviest term (or what made it best: error text, a reason)."""
    line = lines[center]
    if len(line) > WINDOW_CHARS:
        lowered = line.lower()
        terms = weights.matched(lowered)
        if terms:
            term = max(terms, key=lambda t: weights.weight[t])[0]
            start, end = lowered.find(term), lowered.find(term) + len(term)
        else:
            sign = next(m for want in question.wants if (m := want.search(line)) is not None)
            start, end = sign.span()
        return excerpt(line, start, end, WINDOW_CHARS // 2)
    shown = "\n".join(lines[first : last + 1]).strip()
    return ("…" if first > 0 else "") + shown + ("…" if last < len(lines) - 1 else "")


def keep_strong(windows: Sequence[tuple[float, int]]) -> list[int]:
    """The positions of ``windows`` (score, position) best first (newer first among equals), without
    those scoring under ``RELATIVE_FLOOR`` of the best."""
    ordered = sorted(windows, key=lambda w: (w[0], w[1]), reverse=True)
    if not ordered:
        return []
    floor = ordered[0][0] * RELATIVE_FLOOR
    return [position for score, position in ordered if score >= floor]


__all__ = ["Question", "Weights", "Window", "best_window", "is_number", "keep_strong", "line_content", "line_terms",
           "stem"]
