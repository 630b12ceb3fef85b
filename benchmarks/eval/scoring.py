"""Scoring by the rules fixed in ``data/*.facts.json``: facts kept by a summary, probes answered right.

A fact is kept when its regex matches the text case-insensitively. Four texts are scored:
- **whole**: the summary as the next model reads it (``facts_kept_whole``);
- **prose**: the summary with the file lists both agents append by code (``<read-files>``,
  ``<modified-files>``) removed (``facts_kept``; round 4's score);
- **model only**: the summary with every tagged block the code appends removed (``model_only``): a block
  that opens with ``<tag>`` on a line of its own and closes with ``</tag>`` on a line of its own. Since
  issue 41 every deterministic addition is such a block after the model's prose (before it, the code also
  wrote lines into the model's sections: for that code this text still holds them);
- **model's answer**: the text the model itself returned, as the recording proxy saw it (every summarizer
  reply of the compaction, in order): what the model carried, whatever the code did afterwards. (Before
  issue 41's second, short request this was the last reply; a gate's rejected retry counts too.)
A probe is fully right when its regex matches the answer. Nothing here knows which agent wrote what.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
_FILE_LISTS = re.compile(r"<(read-files|modified-files)>[\s\S]*?</\1>")
_TAGGED = re.compile(r"^<([a-z][\w-]*)>[ \t]*\n[\s\S]*?^</\1>[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Rules:
    """One transcript and its fixed rules."""

    name: str
    transcript: Path
    cut_entry_id: str
    facts: tuple[dict[str, Any], ...]
    probes: tuple[dict[str, Any], ...]
    info: dict[str, Any] | None = None  # the whole facts file (split, user language, ...)


def load_rules(name: str, data: Path = DATA) -> Rules:
    """The rules of ``name`` (in ``data``, or for the round-5 set in ``data/r5``)."""
    if not (data / f"{name}.facts.json").exists() and (data / "r5" / f"{name}.facts.json").exists():
        data = data / "r5"
    info = json.loads((data / f"{name}.facts.json").read_text(encoding="utf-8"))
    return Rules(name, data / info["transcript"], info["cut_entry_id"], tuple(info["facts"]), tuple(info["probes"]),
                 info)


def available(data: Path = DATA) -> list[str]:
    """The transcripts directly in ``data`` (the round-5 set is ``available(DATA / "r5")``)."""
    return sorted(p.name.removesuffix(".facts.json") for p in data.glob("*.facts.json"))


def without_file_lists(summary: str) -> str:
    return _FILE_LISTS.sub("", summary)


def model_only(summary: str) -> str:
    """``summary`` without the tagged blocks the code appends (each tag on its own line)."""
    return _TAGGED.sub("", summary)


def kept(rules: Rules, text: str) -> list[str]:
    """Ids of the facts whose rule matches ``text`` as it is."""
    return [f["id"] for f in rules.facts if re.search(f["regex"], text, re.IGNORECASE)]


def facts_kept(rules: Rules, summary: str) -> list[str]:
    """Ids of the facts whose rule matches the summary (file lists removed)."""
    text = without_file_lists(summary)
    return [f["id"] for f in rules.facts if re.search(f["regex"], text, re.IGNORECASE)]


def facts_kept_whole(rules: Rules, summary: str) -> list[str]:
    """Ids of the facts whose rule matches the summary as the next model reads it (file lists included:
    the files shell commands wrote are kept there by construction)."""
    return [f["id"] for f in rules.facts if re.search(f["regex"], summary, re.IGNORECASE)]


def probe_right(probe: dict[str, Any], answer: str) -> bool:
    return re.search(probe["regex"], answer, re.IGNORECASE) is not None
