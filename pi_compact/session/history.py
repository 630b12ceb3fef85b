"""The session's own history as a searchable record: what compaction took out of the context (pure).

A session file is append-only, so every message a compaction summarized is still among its entries:
``search`` finds them by words or a regular expression
(a model's pattern runs under a deadline, ``timed_regex``). No I/O; entries are pi's dicts as the store holds them.
"""

from __future__ import annotations

import gc
import heapq
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.jstext import js_json
from pi_compact.messages import Message, bash_execution_text, text_of
from pi_compact.session.entries import Entry, message_of_entry
from pi_compact.session.terms import has_term, parse_terms, whole
from pi_compact.session.timed_regex import IGNORECASE, MAX_PATTERN_CHARS, compile_pattern, model_pattern, timed_search

# Calls of the ``recall`` tool and their results are never searched: they would only echo the query.
RECALL_TOOL = "recall"
EXCERPT_RADIUS = 240  # characters of context shown on each side of a match
# Characters that make a query a regular expression; "." and "?" are left out on purpose: they end
# ordinary sentences and file names, which are meant as words.
_REGEX_HINTS = re.compile(r"[\\\[\]()|*+^${}]")
# A query that is only a quoted phrase is searched as that phrase, whatever characters it holds.
_QUOTED_ONLY = re.compile(r'"[^"]+"|`[^`]+`')


# ``walk`` is the root-first path to a leaf (``BranchWalker`` keeps it between calls); ``hidden_end`` says where
# the model's context starts on it (everything before is behind the latest compaction's kept boundary, so only
# its summary speaks).
def walk(by_id: Mapping[str, Entry], leaf_id: str | None) -> list[Entry]:
    """Root-first path ending at ``leaf_id`` (empty for None or an unknown id); a missing parent ends it.

    Bounded by the number of entries, so a parent cycle in a damaged file cannot loop for ever.
    """
    path: list[Entry] = []
    current = by_id.get(leaf_id) if leaf_id is not None else None
    for _ in range(len(by_id)):
        if current is None:
            break
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if type(parent) is str else None
    path.reverse()
    return path


class BranchWalker:
    """The current branch, remembered between calls: a leaf one turn further on only extends it.

    ``walk`` over 94k entries takes about a tenth of a second; recall runs once per tool call.
    """

    def __init__(self) -> None:
        self._leaf: str | None = None
        self._path: list[Entry] = []

    def path(self, by_id: Mapping[str, Entry], leaf_id: str | None) -> list[Entry]:
        """Root-first path to ``leaf_id``, as ``walk`` gives it (a new list each call)."""
        newer: list[Entry] = []
        current = by_id.get(leaf_id) if leaf_id is not None else None
        met = False
        for _ in range(len(by_id)):
            if current is None:
                break
            if self._leaf is not None and current.get("id") == self._leaf and by_id.get(self._leaf) is current:
                met = True
                break
            newer.append(current)
            parent = current.get("parentId")
            current = by_id.get(parent) if type(parent) is str else None
        newer.reverse()
        self._path = (self._path + newer) if met else newer
        self._leaf = leaf_id
        return list(self._path)


def hidden_end(path: Sequence[Mapping[str, Any]]) -> int:
    """How many leading entries of ``path`` the model no longer sees (0 when nothing was compacted).

    Behind the latest compaction only the entries from its ``firstKeptEntryId`` on are kept; when that
    id is not on the path before it (pi's rule), everything before the compaction is hidden.
    """
    latest = -1
    for index in range(len(path) - 1, -1, -1):
        if path[index].get("type") == "compaction":
            latest = index
            break
    if latest < 0:
        return 0
    kept = path[latest].get("firstKeptEntryId")
    for index in range(latest):
        if path[index].get("id") == kept:
            return index
    return latest


def _assistant_text(message: Message) -> str:
    parts: list[str] = []
    for block in message.get("content") or ():
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text") or ""))
        elif kind == "thinking":
            parts.append(str(block.get("thinking") or ""))
        elif kind == "toolCall" and block.get("name") != RECALL_TOOL:
            parts.append(_call_text(block))
    return "\n".join(parts)


def _call_text(block: Mapping[str, Any]) -> str:
    """``name key=value ...``: string arguments as they are (cheap, and what a search looks for)."""
    arguments = block.get("arguments")
    if type(arguments) is not dict:
        return str(block.get("name", ""))
    values = [f"{key}={value if type(value) is str else js_json(value)}" for key, value in arguments.items()]
    return f"{block.get('name', '')} " + " ".join(values)


# What a message says, as plain text (tool calls as ``name key=value``); ``TextIndex`` keeps it lower-cased for
# every message, built once and extended as the session grows.
def searchable_text(message: Message) -> str:
    """The text of a message as recall searches and shows it ("" for recall's own results)."""
    role = message.get("role")
    if role == "assistant":
        return _assistant_text(message)
    if role == "toolResult" and message.get("toolName") == RECALL_TOOL:
        return ""
    if role == "bashExecution":
        return bash_execution_text(message)
    if role in ("branchSummary", "compactionSummary"):
        return str(message.get("summary") or "")
    content = message.get("content")
    if type(content) is list and len(content) == 1 and type(content[0]) is dict:
        return str(content[0].get("text") or "")  # the usual one-block message, without the general walk
    return text_of(content)


# Matches terms (ranked by how many, exact ones first) or a regular expression, case-insensitive.
@dataclass(frozen=True)
class Query:
    """A compiled recall query: terms (``session.terms``) or one regular expression.

    Exact terms (identifiers, paths, numbers, quoted phrases) match whole and outweigh every plain word
    together: when a query has any, a message holding none of them is no hit (asked for ``NEEDLE-3``,
    the messages about ``NEEDLE-0`` are not answers). ``score`` works on lower-cased text (what
    ``TextIndex`` holds); ``locate`` finds the match in the original text, for the excerpt.
    """

    text: str
    words: tuple[str, ...] = ()
    pattern: Any = None  # for lower-cased text (a compiled ``timed_regex`` pattern)
    original: Any = None  # case-insensitive, for the original text
    exact: int = 0  # how many of ``words`` (the first ones) must match whole

    @classmethod
    def parse(cls, text: str) -> Query:
        """Terms, unless the text uses regular-expression syntax; raises ValueError for a bad one, or one
        whose compiling could take seconds and gigabytes (``check_pattern``: checked before compiling)."""
        stripped = text.strip()
        if len(stripped) > MAX_PATTERN_CHARS:
            raise ValueError(f"the query is {len(stripped):,} characters long; at most {MAX_PATTERN_CHARS:,} are "
                             "searched (pick its distinctive words)")
        if _REGEX_HINTS.search(stripped) and not _QUOTED_ONLY.fullmatch(stripped):
            lowered, original = model_pattern(stripped)
            return cls(stripped, pattern=lowered, original=original)
        return cls.of_terms(stripped)

    @classmethod
    def of_terms(cls, text: str, most: int | None = None) -> Query:
        """The terms of ``text`` (at most ``most`` of each kind), never a regular expression."""
        terms = parse_terms(text)
        exact, plain = terms.exact[:most], terms.plain[:most]
        if not exact and not plain:
            raise ValueError("the query has no words to search for")
        shown = [whole(t).pattern for t in exact] or [re.escape(w) for w in sorted(plain, key=len, reverse=True)]
        return cls(text, words=exact + plain, original=compile_pattern("|".join(shown), IGNORECASE),
                   exact=len(exact))

    @property
    def weights(self) -> tuple[int, ...]:
        """Per word: an exact term outweighs all plain words together."""
        return tuple(self.floor if index < self.exact else 1 for index in range(len(self.words)))

    @property
    def floor(self) -> int:
        """The least score of a hit: one exact term when the query has any, else one word."""
        return len(self.words) - self.exact + 1 if self.exact else 1

    @property
    def best(self) -> int:
        """The highest score a message can get."""
        return sum(self.weights) if self.pattern is None else 1

    def score(self, lowered: str, until: float | None = None) -> int:
        """How well lower-cased text matches (0: no hit; 1 for a regex match).

        Raises ``PatternTimeout`` when a regular expression runs past ``until`` (``time.monotonic()``)."""
        if self.pattern is not None:
            return 1 if timed_search(self.pattern, lowered, until) else 0
        score = sum(weight for index, (word, weight) in enumerate(zip(self.words, self.weights, strict=True))
                    if has_term(lowered, word, index < self.exact))
        return score if score >= self.floor else 0

    def locate(self, text: str, until: float | None = None) -> tuple[int, int]:
        """Where the first match is in ``text`` ((0, 0) when it cannot be placed); ``until`` as for ``score``."""
        assert self.original is not None
        found = timed_search(self.original, text, until)
        return (found.start(), found.end()) if found is not None else (0, 0)


class TextIndex:
    """The lower-cased searchable text of every message of a session, built once and then extended.

    Reading 94k messages out of their JSON shape costs most of a second; a recall over a big session
    pays that on its first call only. Entries are appended, never changed, so the index follows the
    store's list by position (and starts again if that list was replaced or shrank).
    """

    def __init__(self) -> None:
        self._source: Sequence[Entry] | None = None
        self._seen = 0
        self._texts: dict[str, str] = {}

    def update(self, entries: Sequence[Entry]) -> None:
        if entries is not self._source or len(entries) < self._seen:
            self._source, self._seen, self._texts = entries, 0, {}
        texts = self._texts
        collecting = gc.isenabled()
        gc.disable()  # every object built here survives: collecting would only rescan the session
        try:
            for entry in entries[self._seen :]:
                message = _message(entry)
                text = searchable_text(message) if message is not None else ""
                if text and type(entry.get("id")) is str:
                    texts[entry["id"]] = text.lower()
        finally:
            if collecting:
                gc.enable()
        self._seen = len(entries)

    @property
    def texts(self) -> Mapping[str, str]:
        """Lower-cased searchable text by entry id (entries without a message are absent)."""
        return self._texts


@dataclass(frozen=True)
class Hit:
    """One matching message: where it is, what it is, and the text around the match."""

    entry: Entry
    message: Message
    score: int
    excerpt: str

    @property
    def entry_id(self) -> str:
        return str(self.entry.get("id", ""))


def excerpt(text: str, start: int, end: int, radius: int = EXCERPT_RADIUS) -> str:
    """The text around ``text[start:end]``, cut at spaces where possible, "…" where something was left out."""
    if len(text) <= 2 * radius + (end - start):
        return text.strip()
    left = max(0, start - radius)
    right = min(len(text), end + radius)
    if left > 0:
        space = text.find(" ", left, start)
        left = space + 1 if space >= 0 else left
    if right < len(text):
        space = text.rfind(" ", end, right)
        right = space if space >= 0 else right
    return ("…" if left > 0 else "") + text[left:right].strip() + ("…" if right < len(text) else "")


@dataclass(frozen=True)
class SearchResult:
    """The hits to show (best first), how many messages matched, and whether the scan stopped early.

    ``complete`` False: more than ``limit`` best-scoring matches were found, so older messages were not
    read; ``total`` then counts only what was read (there may be more).
    """

    hits: tuple[Hit, ...]
    total: int
    complete: bool = True
    # Set when the time budget ran out: the position in ``entries`` of the oldest message read.
    stopped_at: int | None = None


def _message(entry: Mapping[str, Any]) -> Message | None:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if type(message) is dict else None
    if kind in ("custom_message", "branch_summary"):
        return message_of_entry(entry)
    return None


# The best hits, newest first among equals, with a short excerpt around the match, reading newest to oldest and
# stopping as soon as nothing older could rank higher.
def search(
    entries: Sequence[Entry], query: Query, limit: int, index: TextIndex | None = None,
    out_of_time: Callable[[], bool] | None = None, until: float | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> SearchResult:
    """The ``limit`` best-matching messages of ``entries``: higher ``Query.score`` first, then newest first.

    Reads newest to oldest and stops once more than ``limit`` messages matched with the best possible
    score: nothing older could rank above them. ``index`` must have been updated with a list holding
    ``entries`` (without one, a throwaway index is built). ``out_of_time`` is asked every few hundred
    messages; once it says yes the scan stops there (``stopped_at``), so a pathological regular
    expression over a huge session still answers promptly, saying how far back it looked. ``cancelled``
    is asked as often (before every message for a regular expression): once yes, nothing is kept. ``until``
    (a ``time.monotonic()`` value) bounds each regular-expression call: one that backtracks past it
    raises ``PatternTimeout``.
    """
    limit = max(1, limit)
    if index is None:
        index = TextIndex()
        index.update(entries)
    texts = index.texts
    best = query.best
    words, pattern = query.words, query.pattern
    exact, weights, floor = query.exact, query.weights, query.floor
    kept: list[tuple[int, int]] = []  # a min-heap of (score, position): the ``limit`` best so far
    total = perfect = 0
    complete = True
    # The hot loop of a recall over a big session: locals only, no call per entry but the match, and
    # no object per match (a tuple for each of 90k matches would also wake the garbage collector).
    stopped_at: int | None = None
    every = 0 if pattern is not None else 255  # a regular expression may be slow on each message
    for position in range(len(entries) - 1, -1, -1):
        if cancelled is not None and not position & every and cancelled():
            return SearchResult((), total, False, position)
        if out_of_time is not None and not position & 255 and out_of_time():
            stopped_at, complete = position, False
            break
        lowered = texts.get(entries[position].get("id", ""))
        if lowered is None:
            continue
        if pattern is not None:
            score = 1 if timed_search(pattern, lowered, until) else 0
        else:
            score = 0
            for at, word in enumerate(words):
                if word in lowered and (at >= exact or whole(word).search(lowered) is not None):
                    score += weights[at]
            if score < floor:
                continue
        if not score:
            continue
        total += 1
        # Among equal scores the newer (higher position) wins, so a later, older one never displaces it.
        if len(kept) < limit:
            heapq.heappush(kept, (score, position))
        elif score > kept[0][0]:
            heapq.heapreplace(kept, (score, position))
        if score == best:
            perfect += 1
            if perfect > limit:
                complete = False
                break
    hits: list[Hit] = []
    for score, position in sorted(kept, reverse=True):
        entry = entries[position]
        message = _message(entry)
        assert message is not None  # indexed entries hold a message
        text = searchable_text(message)
        hits.append(Hit(entry, message, score, excerpt(text, *query.locate(text, until))))
    return SearchResult(tuple(hits), total, complete, stopped_at)
