"""The decisions, next steps and settings the user stated, and putting back the ones a summary left out (pure).

A small summarizer keeps that a decision was made and drops why ("deduplicate by offset" without
"because two events can share a payload"), forgets the next step the user agreed to, or the value
the user asked a setting to have. Asking the model again costs a request and may lose other facts,
so, as with the rules (``rules.py``), the user's own sentence is appended word for word where the
summary lacks it. Only the user's typed words count (``user_ids.typed_text``: no code fences, no
quoted lines, no assistant text or tool output), and only sentences that unmistakably state one:

- a decision with its reason: a choice ("instead of", "rather than", "let's", "go with", "decided"...)
  and a reason ("because", "so that", "given that", "due to") in the same sentence, under Key Decisions;
- an agreed next step: "the next step", "next steps", "after this/that", "as a follow-up", under
  Next Steps;
- a setting: ``set NAME to VALUE`` (or ``NAME = VALUE`` / ``NAME: VALUE``) where NAME is written as a
  setting (UPPER_CASE, camelCase, dotted, snake_case or in backticks), on one line under Critical Context.

A statement counts as present when the summary holds at least two thirds of its own words (common
ones aside); a setting when one line of the summary names both the setting and its value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pi_compact.compaction.fileops import strip_file_lists
from pi_compact.compaction.listed import add_line, listed, newest_distinct
from pi_compact.compaction.prompts import DECISIONS, NEXT_STEPS
from pi_compact.compaction.quality import append_items, normalise
from pi_compact.compaction.user_ids import typed_text
from pi_compact.messages import Message
from pi_compact.session.terms import COMMON

DECISIONS_ADDED = 3  # the newest distinct decisions, at most
NEXT_STEPS_ADDED = 2  # an older agreed step is more often done or replaced by then
SETTINGS_ADDED = 8
SETTINGS_PREFIX = "- Settings the user asked for: "
KEPT_SHARE = 2 / 3
MIN_STATEMENT = 20  # characters
MAX_STATEMENT = 320  # a longer "sentence" is a pasted paragraph more often than a statement

_SENTENCE_END = re.compile(r"(?<=[.!;])\s+|\n+")
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
_CHOICE = re.compile(
    r"\b(?:instead of|rather than|let's|let us|go with|going with|decided|decide|chose|choose|opt for|"
    r"switch(?:ed)? to|stick with|we(?:'ll| will| should) (?:use|keep|go|do|make|take|move|pick|drop|stay))\b",
    re.IGNORECASE,
)
_REASON = re.compile(r"\b(?:because|so that|given that|due to)\b", re.IGNORECASE)
_NEXT = re.compile(
    r"\b(?:(?:the )?next steps?\b|after (?:this|that)\b|afterwards\b|as a follow[- ]up\b|once (?:this|that) is done\b)",
    re.IGNORECASE,
)
# A name written as a setting: in backticks, UPPER_CASE, camelCase, or dotted/snake_case. The parts are
# counted: unbounded, a long dotted run ("a.a.a...") is scanned again from every dot (quadratic time).
_NAME = (r"`[^`\n]{2,60}`|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){1,8}|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*){1,8}"
         r"|[a-z][a-z0-9]*(?:[._][a-z0-9]+){1,8}")
# A value unmistakably written as one: quoted, a number, a switch, or a token with a digit or a separator
# ("set fooBar to the default" states none).
_VALUE = r"`[^`\n]{1,60}`|\"[^\"\n]{1,60}\"|[-+]?\d[\w.:/%-]*|true\b|false\b|on\b|off\b|\w+[\d_./:-][\w.:/-]*"
_SETTING = re.compile(
    rf"\b[Ss]et(?:ting)?\s+(?:the\s+)?(?P<n1>{_NAME})\s+(?:to|=)\s+(?P<v1>{_VALUE})"
    # ``NAME = VALUE``; with a colon only an UPPER_CASE name (``config.py: the timeout`` states no setting).
    rf"|(?<![\w`])(?P<n2>{_NAME})\s*=\s*(?P<v2>{_VALUE})"
    rf"|(?<![\w`])(?P<n3>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\s*:\s*(?P<v3>{_VALUE})"
)
_DOT_AT_END = re.compile(r"[.,;:]+$")


def _sentences(messages: Iterable[Message]) -> list[str]:
    """Each sentence the user typed, in order."""
    found: list[str] = []
    for message in messages:
        for sentence in _SENTENCE_END.split(typed_text(message)):
            sentence = sentence.strip()
            if MIN_STATEMENT <= len(sentence) <= MAX_STATEMENT and not sentence.endswith("?"):
                found.append(sentence)
    return found


def _newest(sentences: Iterable[str], limit: int) -> list[str]:
    return newest_distinct((), sentences, limit)


def stated_decisions(messages: Iterable[Message], limit: int = DECISIONS_ADDED) -> list[str]:
    """The newest ``limit`` sentences of the user that state a choice together with its reason."""
    return _newest((s for s in _sentences(messages)
                    if _CHOICE.search(_QUOTED.sub('""', s)) and _REASON.search(_QUOTED.sub('""', s))), limit)


def stated_next_steps(messages: Iterable[Message], limit: int = NEXT_STEPS_ADDED) -> list[str]:
    """The newest ``limit`` sentences of the user that name an agreed next step."""
    return _newest((s for s in _sentences(messages) if _NEXT.search(_QUOTED.sub('""', s))), limit)


def _bare(value: str) -> str:
    return value[1:-1] if value[:1] in "`\"" and value[-1:] == value[:1] and len(value) > 1 else value


def settings_in(text: str) -> list[str]:
    """The ``NAME = VALUE`` settings stated in ``text``, in order, each once."""
    found: dict[str, None] = {}
    for match in _SETTING.finditer(text):
        name = _bare(match.group("n1") or match.group("n2") or match.group("n3"))
        value = _bare(_DOT_AT_END.sub("", match.group("v1") or match.group("v2") or match.group("v3")))
        if value and not (name.lower().startswith(("http", "www.")) or value.startswith("//")):
            found.setdefault(f"{name} = {value}", None)
    return list(found)


def stated_settings(messages: Iterable[Message], previous_summary: str | None = None,
                    limit: int = SETTINGS_ADDED) -> list[str]:
    """The newest ``limit`` settings the user asked for (a later value of a setting replaces an
    earlier one); those an earlier summary listed come first, as older."""
    latest: dict[str, str] = {}
    typed = (sentence for m in messages for sentence in _SENTENCE_END.split(typed_text(m))
             if not sentence.rstrip().endswith("?"))  # a question about a value asks for no setting
    for entry in [*listed(previous_summary or "", SETTINGS_PREFIX), *(s for t in typed for s in settings_in(t))]:
        name = entry.split(" = ", 1)[0]
        latest.pop(name, None)
        latest[name] = entry
    return list(latest.values())[-limit:]


def _words(text: str) -> set[str]:
    return {w for w in normalise(text).split() if w not in COMMON and (len(w) >= 3 or any(c.isdigit() for c in w))}


def _holds(summary_words: set[str], statement: str) -> bool:
    words = _words(statement)
    return not words or len(words & summary_words) >= KEPT_SHARE * len(words)


def _holds_setting(summary: str, setting: str) -> bool:
    name, value = setting.split(" = ", 1)
    return any(name.lower() in line.lower() and re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", line, re.I)
               for line in summary.splitlines())


def add_missing_statements(summary: str, decisions: Sequence[str], next_steps: Sequence[str],
                           settings: Sequence[str]) -> tuple[str, dict[str, list[str]]]:
    """``summary`` with the decisions, next steps and settings it lacks added word for word, and what
    was added by kind (``decisionsAdded``, ``nextStepsAdded``, ``settingsAdded``; empty kinds left out)."""
    held = _words(strip_file_lists(summary))
    added = {
        "decisionsAdded": [d for d in decisions if not _holds(held, d)],
        "nextStepsAdded": [s for s in next_steps if not _holds(held, s)],
        "settingsAdded": [s for s in settings if not _holds_setting(strip_file_lists(summary), s)],
    }
    items = {heading: [f"- {s}" for s in added[kind]]
             for heading, kind in ((DECISIONS, "decisionsAdded"), (NEXT_STEPS, "nextStepsAdded")) if added[kind]}
    if items:
        summary = append_items(summary, items)
    if added["settingsAdded"]:
        summary = add_line(summary, SETTINGS_PREFIX, added["settingsAdded"])
    return summary, {kind: values for kind, values in added.items() if values}


__all__ = ["add_missing_statements", "settings_in", "stated_decisions", "stated_next_steps", "stated_settings"]
