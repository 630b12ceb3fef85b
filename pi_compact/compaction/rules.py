"""The rules a user stated in the history, and putting back the ones a summary left out (pure).

A summarizer, small models most of all, often lists no rule under "Constraints & Preferences" although
the user gave some. Asking it again costs a whole request and may lose other facts, so a rule the
summary lacks is appended there word for word instead (``add_missing_rules``). Because it is written
into the summary by us, finding rules errs on the strict side: only the user's own words, only a
sentence with a modal ("must", "make sure") or an imperative that opens a clause ("Never ...", "Do not
...", "Keep ..."); not a question, not a plan or a remark about this moment ("Don't start it yet"), not
quoted words (someone else's, or an error), not a pasted block or code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pi_compact.compaction.prompts import CONSTRAINTS
from pi_compact.compaction.quality import append_items, normalise, sections
from pi_compact.session.terms import COMMON

# Where a serialized block starts (``serialize``): a blank line, then a ``[Role]: `` tag.
_BLOCK = re.compile(r"\n\n(?=\[[A-Za-z ]+\]: )")
_NOT_TYPED = ("The user ran the shell command", "Earlier parts of this conversation", "The conversation went down")
_MODAL = re.compile(r"\b(?:must(?:n't)?|make sure)\b(?!\s+(?:have|be\s+(?:a|an|the|because|why))\b)", re.IGNORECASE)
_IMPERATIVE = re.compile(
    r"^(?:(?:please|and|also|but|so|then|just)\W+)*(?:(?:you|we)\s+(?:should\s+)?)?"
    r"(?:do not|don't|never|always|avoid|keep|prefer|only|stick to)\b",
    re.IGNORECASE,
)
# A plan, or a remark about this moment ("Don't start it yet", "Don't do anything for that now"), is no
# standing rule, however it is worded; "from now on" is the opposite, and is taken out first.
_FOR_NOW = re.compile(
    r"\b(?:yet|now|today|tonight|this time|at the moment|for the moment|at this point|just note|note it|later"
    r"|next step|after this)\b",
    re.IGNORECASE,
)
_FROM_NOW_ON = re.compile(r"\bfrom (?:now|here) on\b", re.IGNORECASE)
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!;])\s+|\n+")
_CLAUSE_END = re.compile(r"(?<=[,;:])\s+|\s+[-–—]\s+")
LONG_SENTENCE = 240  # a longer sentence is quoted by its clauses that state the rule
MIN_RULE = 12  # characters: "Keep going." is no rule
KEPT_SHARE = 2 / 3  # of a rule's words that must be under Constraints for it to count as listed


def stated_rules(history: str, limit: int = 3) -> list[str]:
    """The newest ``limit`` sentences of the user's own messages in the serialized ``history`` that state
    a standing rule, word for word (a long sentence: its clauses that do)."""
    found: list[str] = []
    for block in _BLOCK.split(history):
        if not block.startswith("[User]: ") or block[8:].startswith(_NOT_TYPED):
            continue
        typed = "\n".join(line for line in _FENCE.sub("\n", block[8:]).splitlines()
                          if not line.lstrip().startswith(">"))  # a quoted block is someone else's words
        for sentence in _SENTENCE_END.split(typed):
            for text in _rule_parts(sentence.strip()):
                if text not in found:
                    found.append(text)
    return found[-limit:]


def _rule_parts(sentence: str) -> list[str]:
    """``sentence`` if one of its clauses states a standing rule (a long one: those clauses), else nothing."""
    if len(sentence) < MIN_RULE or sentence.endswith("?"):
        return []
    clauses = [c.strip() for c in _CLAUSE_END.split(sentence)]
    ruling = [c for c in clauses if _is_rule(c)]
    if not ruling:
        return []
    return [sentence] if len(sentence) <= LONG_SENTENCE else [c for c in ruling if len(c) >= MIN_RULE]


def _is_rule(clause: str) -> bool:
    text = _QUOTED.sub('""', clause)
    if not (_MODAL.search(text) or _IMPERATIVE.search(text)):
        return False
    return not _FOR_NOW.search(_FROM_NOW_ON.sub(" ", text))


def missing_rules(summary: str, rules: Sequence[str]) -> list[str]:
    """The ``rules`` the summary's "Constraints & Preferences" does not state: fewer than ``KEPT_SHARE``
    of a rule's own words (common ones aside) are there."""
    listed = set(normalise(sections(summary).get(CONSTRAINTS, "")).split())
    missing = []
    for rule in rules:
        words = {w for w in normalise(rule).split() if w not in COMMON and (len(w) >= 3 or any(c.isdigit() for c in w))}
        if words and len(words & listed) < KEPT_SHARE * len(words):
            missing.append(rule)
    return missing


def add_missing_rules(summary: str, rules: Sequence[str]) -> tuple[str, list[str]]:
    """``summary`` with each rule it lacks appended under "Constraints & Preferences" word for word, and
    those rules (none: ``summary`` unchanged)."""
    missing = missing_rules(summary, rules)
    if not missing:
        return summary, []
    return append_items(summary, {CONSTRAINTS: [f"- {rule}" for rule in missing]}), missing


__all__ = ["add_missing_rules", "missing_rules", "stated_rules"]
