"""The summary quality gate: what a new summary must keep, and what it changed (pure).

``gate_problems`` checks a model summary before any compaction entry is written; ``merge_back`` puts
forgotten carried items back; ``better_answer`` chooses between an answer and its retry, and
``fill_sections`` gives a section left as placeholders the history's own account; ``summary_diff`` is
what ``/summary --diff`` shows.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.compaction.kept import TAGS
from pi_compact.compaction.prompts import (
    CONSTRAINTS,
    CRITICAL_LABELS,
    DECISIONS,
    GOAL,
    HISTORY_FORMAT,
    HISTORY_HEADINGS,
    NEXT_STEPS,
    PROGRESS,
    TURN_PREFIX_FORMAT,
    missing_headings,
)
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.session.terms import is_identifier

CARRIED_SECTIONS = (CONSTRAINTS, DECISIONS)
# Sections a non-empty history always has something to say about.
CONTENT_SECTIONS = (GOAL, PROGRESS, NEXT_STEPS)
CARRIED_MARK = "(carried forward)"
_BLOCK_OPENINGS = frozenset(f"<{tag}>" for tag in TAGS)
_BULLET = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(?:\[[ xX]\]\s+)?")  # group 1: the marker, without a checkbox
_NON_WORD = re.compile(r"[^\w]+")
_PLACEHOLDER = re.compile(r"^\[[^\]]*\](?: because \[[^\]]*\])?$")  # Key Decisions' is two
_BRACKETED = re.compile(r"\[([^\]]*)\]")
_NO_ITEMS = {"none", "n a", "nothing", "not stated"}
# What a summary must not lose between two answers: the exact values in it. Backticked and double-quoted
# text whole; paths; flags; identifier-like tokens (filtered by ``terms.is_identifier``); numbers.
_EXACT = re.compile(
    r"`([^`\n]{1,120})`"
    r'|"([^"\n]{1,120})"'
    r"|(?<![\w/.~-])((?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w)"
    r"|(?<![\w-])(--?[A-Za-z][\w-]*\w)"
    r"|(?<![\w.-])([A-Za-z_][\w.-]*\w)"
    r"|(?<![\w.])(\d+(?:[.,:]\d+)*)"
)
# A summary this small is short whatever it replaces: about the least the six sections take for a real
# conversation (the embedded 1.5B model wrote 226-537 tokens for a 2,760-token transcript). When it is
# still not smaller than the history, the history is too small to gain from any summary: asking again
# cannot help, and the pipeline's no-gain check writes nothing instead.
SHORT_SUMMARY_TOKENS = 512


def sections(summary: str) -> dict[str, str]:
    """The body of each ``## `` section of a summary (``###`` sub-headings stay in their section's body)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in summary.splitlines():
        stripped = line.strip()
        if stripped.startswith("## "):
            current = found.setdefault(stripped, [])
            continue
        if stripped.startswith("---") or stripped in _BLOCK_OPENINGS:
            break  # the history part ends here: a split turn's context or the blocks of ``kept`` follow
        if current is not None:
            current.append(line)
    return {heading: "\n".join(lines).strip() for heading, lines in found.items()}


def normalise(text: str) -> str:
    """Lower case, markdown, bullets and punctuation removed, whitespace collapsed."""
    return " ".join(_NON_WORD.sub(" ", _BULLET.sub("", text).replace(CARRIED_MARK, "")).lower().split())


# The words of each bracketed instruction in the format: a line in brackets is a placeholder when it
# repeats one of these, not when a small model put its own note in brackets ("- [x] [Refactor the
# quotas]": seen on the 1.5B model, whose real Progress was then retried as empty).
_TEMPLATE_WORDS = [set(normalise(text).split()) for text in _BRACKETED.findall(HISTORY_FORMAT + TURN_PREFIX_FORMAT)]
# The same instructions copied without their brackets (the 1.5B model wrote "- NAME = VALUE, the newest value
# only" under Values set in the issue-44 walk); only those of three words or more, which no real item repeats.
_TEMPLATE_TEXTS = frozenset(
    text for text in (normalise(inner) for inner in _BRACKETED.findall(HISTORY_FORMAT + TURN_PREFIX_FORMAT))
    if len(text.split()) >= 3
)


def _without_label(text: str) -> str:
    """``text`` without a leading Critical Context label ("Exact errors: ...") of the format."""
    label, colon, rest = text.partition(":")
    return rest.strip() if colon and label.strip() in CRITICAL_LABELS else text


def is_placeholder(text: str) -> bool:
    """Is ``text`` (a line without its bullet, after any label of the format) only the format's bracketed
    instructions, repeated?"""
    text = _without_label(text)
    if normalise(text) in _TEMPLATE_TEXTS:
        return True
    if not _PLACEHOLDER.match(text):
        return False
    for inner in _BRACKETED.findall(text):
        words = set(normalise(inner).split())
        if words and not any(len(words & template) >= 0.6 * len(words) for template in _TEMPLATE_WORDS):
            return False  # the model's own words, in brackets
    return True


def unbracketed(text: str) -> str:
    """A line of the model's own words in brackets, without them (a placeholder stays as it is)."""
    if not _PLACEHOLDER.match(_without_label(text)) or is_placeholder(text):
        return text
    return _BRACKETED.sub(lambda m: m.group(1), text)


def items(body: str) -> list[str]:
    """The items (lines) of a section body without bullet markers; sub-headings, "(none)" and placeholders
    are no items."""
    found = []
    for line in body.splitlines():
        text = _BULLET.sub("", line).strip()
        if text.startswith("#"):
            continue
        if text and normalise(text) not in _NO_ITEMS and not is_placeholder(text):
            found.append(text)
    return found


def completed_tail(summary: str) -> str:
    """``summary`` with its missing last heading (Critical Context) added at its end with "(none)".

    Only when that is the one missing (a small model that ended after Next Steps): asking
    again for the whole summary cost the 1.5B model a request and returned a worse one (it dropped
    ``shardCount`` 606 and the agreed next step). Headings missing elsewhere are left for the retry."""
    lines = {line.strip() for line in summary.splitlines()}
    missing = [heading for heading in HISTORY_HEADINGS if heading not in lines]
    if missing != [HISTORY_HEADINGS[-1]]:  # only the last, which may say "(none)" anyway
        return summary
    return summary.rstrip() + "".join(f"\n\n{heading}\n- (none)" for heading in missing)


def placeholder_sections(summary: str) -> list[str]:
    """Content sections left empty or holding only template placeholders (``[...]``)."""
    bodies = sections(summary)
    bad = []
    for heading in CONTENT_SECTIONS:
        lines = [_BULLET.sub("", line).strip() for line in bodies.get(heading, "").splitlines()]
        real = [line for line in lines if line and not line.startswith("#") and not is_placeholder(line)]
        if not real:
            bad.append(heading)
    return bad


def clear_placeholders(summary: str) -> str:
    """``summary`` with every line that only repeats a template placeholder (``- [What the user ...]``)
    saying "(none)" instead: a small model copies the format's instructions into sections it has
    nothing for, and the next model must not read them as context. A note of its own that it put in
    brackets loses them."""
    lines = []
    for line in summary.splitlines():
        bullet = _BULLET.match(line)
        if bullet and is_placeholder(line[bullet.end():].strip()):
            body = line[bullet.end():].strip()
            label = body[: len(body) - len(_without_label(body))].rstrip()
            line = bullet.group(1) + (f"{label} (none)" if label else "(none)")
        elif bullet:
            line = line[: bullet.end()] + unbracketed(line[bullet.end():].strip())
        lines.append(line)
    return "\n".join(lines) + ("\n" if summary.endswith("\n") else "")


def missing_items(previous: str | None, summary: str) -> dict[str, list[str]]:
    """Per carried section, the previous summary's items the new summary no longer contains."""
    if not previous:
        return {}
    old = sections(previous)
    new_text = normalise(summary)
    missing: dict[str, list[str]] = {}
    for heading in CARRIED_SECTIONS:
        lost = [item for item in items(old.get(heading, "")) if normalise(item) not in new_text]
        if lost:
            missing[heading] = lost
    return missing


# Items still missing after one stricter retry are merged back under their section, marked as carried forward,
# so a model that forgets a user's rule cannot make the agent forget it.
def merge_back(summary: str, missing: Mapping[str, Sequence[str]]) -> str:
    """``summary`` with each missing item appended at the end of its section, marked as carried forward."""
    return append_items(summary, {h: [f"- {item} {CARRIED_MARK}" for item in lost] for h, lost in missing.items()})


def _section_span(lines: Sequence[str], heading: str) -> tuple[int, int] | None:
    """(the heading's line, the line after its section) in ``lines``; None when it has no such heading."""
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not lines[end].strip().startswith(("## ", "---")):
        end += 1
    return start, end


def append_items(summary: str, lines_by_heading: Mapping[str, Sequence[str]]) -> str:
    """``summary`` with the given lines appended at the end of each heading's section (the section is
    added when missing; a "(none)" line there goes)."""
    lines = summary.splitlines()
    for heading, added in lines_by_heading.items():
        span = _section_span(lines, heading)
        if span is None:
            lines += ["", heading, *added]
            continue
        start, end = span
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        # A "(none)" line would contradict the items now under it.
        body = [line for line in lines[start + 1 : end] if normalise(line) not in _NO_ITEMS]
        lines[start + 1 : end] = [*body, *added]
    return "\n".join(lines)


def fill_sections(summary: str, bodies: Mapping[str, str]) -> tuple[str, list[str]]:
    """``summary`` with each content section it left empty or as placeholders given the body ``bodies``
    has for it (built from the history without a model); also the headings filled."""
    lines = summary.splitlines()
    filled = [heading for heading in placeholder_sections(summary) if heading in bodies]
    for heading in filled:
        span = _section_span(lines, heading)
        if span is None:
            lines += ["", heading, *bodies[heading].splitlines()]
            continue
        lines[span[0] + 1 : span[1]] = [*bodies[heading].splitlines(), ""]
    return "\n".join(lines).rstrip() + "\n" if filled else summary, filled


def fill_answer(text: str, bodies: Mapping[str, str], hard: Callable[[str], list[str]]) -> str:
    """``text`` with its placeholder sections given ``bodies`` when that was all it lacked (``hard``
    finds no other problem), else ''."""
    if not text or missing_headings(text):
        return ""
    filled, headings = fill_sections(text, bodies)
    return filled if headings and not hard(filled) else ""


def better_answer(first: str | None, retry: str | None, replaced: int) -> tuple[str, dict[str, Any]]:
    """The retry when it keeps every exact value of the first, else the first with the retry's new
    rules and decisions merged in (or the first alone); the record says which, for ``details``."""
    if first is None:
        assert retry is not None
        return retry, {"action": "retried"}
    if retry is None:
        return first, {"action": "keptFirst", "reason": "the retry was unusable"}
    lost = lost_items(first, retry)
    if not lost:
        return retry, {"action": "retried"}
    merged, added = merge_new_items(first, retry)
    if added and estimate_text_tokens(merged) < replaced:
        return merged, {"action": "merged", "lost": lost, "added": added}
    return first, {"action": "keptFirst", "lost": lost}


def exact_items(text: str) -> list[str]:
    """The exact values ``text`` holds, in order, each once: backticked and quoted text, paths, flags,
    identifiers (``refill_tokens``, ``NEEDLE-3``, ``refillTokensLocked``, ``os.path``) and numbers.

    What a retry must keep of a first answer (``lost_items``); case is kept, the comparison ignores it."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        for match in _EXACT.finditer(_BULLET.sub("", line)):  # list numbers are no values
            index = next(i for i, group in enumerate(match.groups()) if group is not None)
            value = match.group(index + 1).strip()
            if value and (index != 4 or is_identifier(value)):
                found.setdefault(value, None)
    return list(found)


def lost_items(first: str, second: str) -> list[str]:
    """The exact values of ``first`` that ``second`` does not hold as a whole token (case ignored)."""
    lowered = second.lower()
    lost = []
    for item in exact_items(first):
        after = r"(?!\d|[.,:]\d)" if item[0].isdigit() else r"(?!\w)"
        if not re.search(r"(?<![\w.])" + re.escape(item.lower()) + after, lowered):
            lost.append(item)
    return lost


def merge_new_items(first: str, retry: str) -> tuple[str, dict[str, list[str]]]:
    """``first`` with the items the ``retry`` added under the carried sections (the user's rules, the
    decisions) appended to the same sections of ``first``; also returns what was added, per section."""
    old, new = sections(first), sections(retry)
    added: dict[str, list[str]] = {}
    for heading in CARRIED_SECTIONS:
        have = set(normalise(old.get(heading, "")).split())
        # An item whose every word the first already has under that heading is a rewording, not news.
        fresh = [item for item in items(new.get(heading, "")) if not set(normalise(item).split()) <= have]
        if fresh:
            added[heading] = fresh
    return append_items(first, {h: [f"- {item}" for item in v] for h, v in added.items()}), added


# The checks:
# - structure: no section may be left empty or as the template's ``[...]`` placeholder when the history it
#   summarizes is not empty (missing headings are ``prompts.missing_headings``' job);
# - carry-forward: every item under "Constraints & Preferences" and "Key Decisions" of the previous summary must
#   still be there (compared normalised: case, markdown and punctuation ignored), where an item the model marks
#   done or obsolete still counts as present because its text is;
# - no inflation: a summary must be smaller than the text it replaces, unless it is short anyway
#   (``SHORT_SUMMARY_TOKENS``): then the history is too small, not the summary too long.
# The user's own words are no reason to ask again: they are kept word for word after the summary, without
# a model (``compaction.kept``).
def gate_problems(summary: str, previous: str | None, replaced_tokens: int, summary_tokens: int) -> list[str]:
    """Why a model summary fails the gate, in words the retry prompt can quote; empty when it passes."""
    problems = [f"the section {h} is empty or a placeholder" for h in placeholder_sections(summary)]
    for heading, lost in missing_items(previous, summary).items():
        quoted = "; ".join(f'"{item}"' for item in lost)
        problems.append(f"under {heading} it dropped {quoted} (keep each, or mark it done or obsolete)")
    if summary_tokens >= replaced_tokens and summary_tokens > SHORT_SUMMARY_TOKENS:
        problems.append(
            f"it is about {summary_tokens} tokens, not smaller than the {replaced_tokens} tokens it replaces"
        )
    return problems


@dataclass(frozen=True)
class SectionDiff:
    """What one section gained, changed and lost between two summaries."""

    heading: str
    added: tuple[str, ...]
    changed: tuple[tuple[str, str], ...]
    dropped: tuple[str, ...]


def summary_diff(previous: str, latest: str) -> list[SectionDiff]:
    """Per section with any difference: items added, changed (a close rewording) and dropped."""
    old, new = sections(previous), sections(latest)
    diffs = []
    for heading in [*HISTORY_HEADINGS, *(h for h in new if h not in HISTORY_HEADINGS)]:
        before, after = items(old.get(heading, "")), items(new.get(heading, ""))
        before_keys, after_keys = {normalise(i) for i in before}, {normalise(i) for i in after}
        gone = [i for i in before if normalise(i) not in after_keys]
        came = [i for i in after if normalise(i) not in before_keys]
        changed = []
        for item in list(gone):
            match = max(came, key=lambda c: _similar(item, c), default=None)
            if match is not None and _similar(item, match) >= 0.6:
                changed.append((item, match))
                gone.remove(item)
                came.remove(match)
        if gone or came or changed:
            diffs.append(SectionDiff(heading, tuple(came), tuple(changed), tuple(gone)))
    return diffs


def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalise(a), normalise(b)).ratio()


def format_diff(diffs: Sequence[SectionDiff]) -> str:
    """``summary_diff`` as plain lines: ``+`` added, ``~`` changed (old → new), ``-`` dropped."""
    if not diffs:
        return "No differences in the summary's items."
    lines = []
    for diff in diffs:
        lines.append(diff.heading)
        lines += [f"  + {item}" for item in diff.added]
        lines += [f"  ~ {old} → {new}" for old, new in diff.changed]
        lines += [f"  - {item}" for item in diff.dropped]
    return "\n".join(lines)


__all__ = [
    "CARRIED_MARK",
    "CARRIED_SECTIONS",
    "SHORT_SUMMARY_TOKENS",
    "SectionDiff",
    "append_items",
    "clear_placeholders",
    "completed_tail",
    "exact_items",
    "format_diff",
    "gate_problems",
    "items",
    "lost_items",
    "merge_back",
    "merge_new_items",
    "missing_items",
    "normalise",
    "placeholder_sections",
    "sections",
    "summary_diff",
]
