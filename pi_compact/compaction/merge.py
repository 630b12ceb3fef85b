"""An update summary built in two parts (pure): the model summarizes only what is new, code merges it into
the previous summary section by section.

Asked to rewrite a previous summary together with the new messages, the 1.5B model kept the previous
summary and dropped nearly everything said since (issue 41: of five new facts it kept one, pi's model
none). So the new span is asked on its own, as a first summary, and ``merge_summaries`` joins the two:
the new summary stays as the model wrote it, and the previous summary's goals, rules, decisions, finished
work and context lines that it lacks are put under the same headings, before the new items; the new
summary's In Progress, Blocked and Next Steps stand for the work as it is now (the previous Next Steps only
when the new summary has none); a previous context line that names a setting the new summary gives another
value is left out, so only the newest value is there.
"""

from __future__ import annotations

import re

from pi_compact.compaction.prompts import (
    BLOCKED,
    CONSTRAINTS,
    CRITICAL,
    DECISIONS,
    DONE,
    GOAL,
    IN_PROGRESS,
    NEXT_STEPS,
    PROGRESS,
    missing_headings,
)
from pi_compact.compaction.quality import items, normalise, sections

# Tagged blocks the code appends after the prose (``<read-files>``...): not the previous summary's sections.
_TAGGED = re.compile(r"^<([a-z][\w-]*)>[ \t]*\n[\s\S]*?^</\1>[ \t]*$", re.MULTILINE)
# A name a value is set under: UPPER_CASE, camelCase or snake_case, followed by a number nearby.
_SETTING = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:_[a-z0-9]+)+)\b"
                      r"[^\n\d]{0,24}?(\d[\d.,]*)")
_SUBSECTIONS = (DONE, IN_PROGRESS, BLOCKED)


def mergeable(previous: str | None) -> bool:
    """Whether ``previous`` has the sections a merge needs (a model-free or foreign summary may not)."""
    return bool(previous) and not missing_headings(prose(previous or ""))


def prose(summary: str) -> str:
    """``summary`` without its tagged blocks."""
    return _TAGGED.sub("", summary).strip()


def _progress(body: str) -> dict[str, list[str]]:
    parts: dict[str, list[str]] = {heading: [] for heading in _SUBSECTIONS}
    current = DONE
    for line in body.splitlines():
        if line.strip() in _SUBSECTIONS:
            current = line.strip()
        elif line.strip():
            parts[current].append(line)
    return {heading: items("\n".join(lines)) for heading, lines in parts.items()}


def _superseded(old: list[str], new: list[str]) -> list[str]:
    """``old`` without the items that set a name to a value which ``new`` sets to another value."""
    newer: dict[str, set[str]] = {}
    for item in new:
        for name, value in _SETTING.findall(item):
            newer.setdefault(name, set()).add(value.rstrip(".,"))
    kept = []
    for item in old:
        stale = [name for name, value in _SETTING.findall(item)
                 if name in newer and value.rstrip(".,") not in newer[name]]
        if not stale:
            kept.append(item)
    return kept


def _insert(lines: list[str], heading: str, added: list[str], marker: str) -> list[str]:
    """``lines`` with ``added`` (each behind ``marker``) right under ``heading``, where a "(none)" there goes;
    the heading is added at the end when missing."""
    if not added:
        return lines
    new = [marker + item for item in added]
    if heading not in [line.strip() for line in lines]:
        return [*lines, "", heading, *new]
    at = [line.strip() for line in lines].index(heading) + 1
    end = at
    while end < len(lines) and not lines[end].strip().startswith(("## ", "### ", "---")):
        end += 1
    body = [line for line in lines[at:end] if normalise(line) not in ("none", "")]
    return [*lines[:at], *new, *body, "", *lines[end:]]


def merge_summaries(previous: str, new: str) -> str:
    """One summary of everything: ``new`` as the model wrote it, with what ``previous`` (its prose) holds and
    ``new`` lacks put under the same headings before the new items."""
    old, fresh = sections(prose(previous)), sections(new)
    lines = new.strip().splitlines()

    def missing(heading: str, old_items: list[str] | None = None) -> list[str]:
        have = {normalise(item) for item in items(fresh.get(heading, ""))}
        return [item for item in (old_items if old_items is not None else items(old.get(heading, "")))
                if normalise(item) not in have]

    for heading in (GOAL, CONSTRAINTS, DECISIONS):
        lines = _insert(lines, heading, missing(heading), "- ")
    now = items(fresh.get(CRITICAL, ""))
    lines = _insert(lines, CRITICAL, missing(CRITICAL, _superseded(items(old.get(CRITICAL, "")), now)), "- ")
    if not items(fresh.get(NEXT_STEPS, "")):
        lines = _insert(lines, NEXT_STEPS, items(old.get(NEXT_STEPS, "")), "- ")
    done_before = _progress(old.get(PROGRESS, ""))[DONE]
    have_done = {normalise(item) for item in _progress(fresh.get(PROGRESS, ""))[DONE]}
    lines = _insert(lines, DONE, [item for item in done_before if normalise(item) not in have_done], "- [x] ")
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip()
