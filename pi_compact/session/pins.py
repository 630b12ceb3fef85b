"""Pinned context: notes the user wants the model to keep seeing whatever compaction summarizes (pure).

A pin is a ``custom`` entry (``customType`` "pi-compact.pin", ``data.text``), which pi keeps in the file
and leaves out of the model's context; ``/unpin`` appends a "pi-compact.unpin" entry naming the pin's
entry id. So pins follow the tree: the pins in force are those on the current branch, folded root to
leaf, and they survive resume because they are entries. Their text goes to the model verbatim, in a
block after the system prompt (``with_pins``), never through a summary, so compaction cannot alter it.
No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.messages import text_of
from pi_compact.session.entries import Entry

PIN_TYPE = "pi-compact.pin"
UNPIN_TYPE = "pi-compact.unpin"
BUDGET_PERCENT = 15  # default pin budget: this share of the model's context window
PINS_HEADER = (
    "<pinned-notes>\nThe user pinned these notes. They stay in force for the whole session, whatever "
    "earlier messages were summarized; each is quoted exactly as the user pinned it."
)
PINS_FOOTER = "</pinned-notes>"


@dataclass(frozen=True)
class Pin:
    """One pinned note: the entry that pinned it, its text, and the message it came from (if any)."""

    entry_id: str
    text: str
    source_id: str | None = None


def pin_fields(text: str, source_id: str | None = None) -> dict[str, Any]:
    """The entry that pins ``text`` (``source_id``: the user message it copies, for ``/pin`` alone)."""
    data: dict[str, Any] = {"text": text}
    if source_id is not None:
        data["sourceId"] = source_id
    return {"type": "custom", "customType": PIN_TYPE, "data": data}


def unpin_fields(pin: Pin) -> dict[str, Any]:
    """The entry that removes ``pin`` from this branch on."""
    return {"type": "custom", "customType": UNPIN_TYPE, "data": {"pinId": pin.entry_id}}


def _event(entry: Mapping[str, Any]) -> tuple[str, Any] | None:
    """("pin", Pin) or ("unpin", pin id) for a pin entry of a sound shape, else None."""
    if entry.get("type") != "custom":
        return None
    data = entry.get("data")
    if not isinstance(data, Mapping):
        return None
    kind = entry.get("customType")
    if kind == PIN_TYPE and isinstance(data.get("text"), str) and isinstance(entry.get("id"), str):
        source = data.get("sourceId")
        return "pin", Pin(entry["id"], data["text"], source if isinstance(source, str) else None)
    if kind == UNPIN_TYPE and isinstance(data.get("pinId"), str):
        return "unpin", data["pinId"]
    return None


def fold_pins(path: Iterable[Mapping[str, Any]], start: Sequence[Pin] = ()) -> tuple[Pin, ...]:
    """The pins in force after ``path`` (root first), starting from ``start``."""
    pins = list(start)
    for entry in path:
        event = _event(entry)
        if event is None:
            continue
        if event[0] == "pin":
            pins.append(event[1])
        else:
            pins = [pin for pin in pins if pin.entry_id != event[1]]
    return tuple(pins)


CustomsOnPath = Callable[[str | None, str | None], tuple[list[Entry], bool]]
"""``SessionStore.customs_on_path``: (leaf, since) -> the custom entries after ``since`` on the path to
the leaf, root first, and whether ``since`` is on it."""


class PinTracker:
    """The pins of the current branch, kept up to date cheaply as the leaf moves.

    Walking a long branch on every request would cost a tenth of a second on a 100 MB session, so
    it remembers the pins at the leaf it last saw: when the new leaf descends from it (the usual
    case, one turn later), only the entries in between are read. Only custom entries are looked at,
    which a resumed session reads without loading the rest (pins may lie before its last compaction).
    """

    def __init__(self) -> None:
        self._leaf: str | None = None
        self._pins: tuple[Pin, ...] = ()

    def current(self, customs_on_path: CustomsOnPath, leaf_id: str | None) -> tuple[Pin, ...]:
        newer, met = customs_on_path(leaf_id, self._leaf)
        self._pins = fold_pins(newer, self._pins if met else ())
        self._leaf = leaf_id
        return self._pins


def last_user_text(path: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(entry id, text) of the newest user message on ``path`` with text, or None."""
    for entry in reversed(path):
        if entry.get("type") != "message":
            continue
        message = entry.get("message") or {}
        if message.get("role") == "user":
            text = text_of(message.get("content")).strip()
            if text:
                return str(entry.get("id")), text
    return None


def pin_for(path: Sequence[Mapping[str, Any]], text: str) -> dict[str, Any] | None:
    """The entry ``/pin`` writes: a pin of ``text``, or without text of the user's last message on
    ``path`` (None: there is none yet)."""
    if text:
        return pin_fields(text)
    last = last_user_text(path)
    return pin_fields(last[1], last[0]) if last is not None else None


def pinned_block(pins: Sequence[Pin]) -> str:
    """The block the model receives after the system prompt ("" without pins)."""
    if not pins:
        return ""
    body = "\n".join(f'<pin n="{number}">\n{pin.text}\n</pin>' for number, pin in enumerate(pins, 1))
    return f"{PINS_HEADER}\n{body}\n{PINS_FOOTER}"


def with_pins(system_prompt: str, pins: Sequence[Pin]) -> str:
    """The system prompt followed by the pinned block (unchanged without pins)."""
    block = pinned_block(pins)
    return f"{system_prompt}\n\n{block}" if block else system_prompt


def pin_budget(setting: int | None, context_window: int) -> int:
    """``compaction.pinBudget`` or, unset, 15 % of the window."""
    return setting if setting is not None else math.floor(context_window * BUDGET_PERCENT / 100)


def budget_warning(pins: Sequence[Pin], budget: int, tokens: Callable[[str], int]) -> str | None:
    """A warning naming the biggest pin when the pinned block takes more than ``budget`` tokens."""
    if not pins:
        return None
    total = tokens(pinned_block(pins))
    if total <= budget:
        return None
    number, biggest = max(enumerate(pins, 1), key=lambda item: tokens(item[1].text))
    preview = " ".join(biggest.text.split())
    preview = preview if len(preview) <= 60 else preview[:57] + "..."
    return (f"Pinned notes take about {total:,} tokens, over the pin budget of {budget:,} "
            f"(compaction.pinBudget); the biggest is pin {number} (~{tokens(biggest.text):,} tokens, "
            f'"{preview}"). They are still sent in full; /unpin {number} removes it.')
