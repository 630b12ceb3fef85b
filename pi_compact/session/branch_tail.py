"""A lean read of a session file's current branch: only the tail that planning a compaction reads.

``open_branch_tail(path, digest)`` gives the entries from the branch's last compaction kept boundary on,
digested by ``digest`` (the caller's), or None when the file needs ``SessionStore.open``'s full load.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_compact.errors import SessionError
from pi_compact.messages import Message
from pi_compact.session.collector import gc_paused
from pi_compact.session.entries import Entry
from pi_compact.session.jsonl import Relinker, line_problem, parse_line
from pi_compact.session.migrate import migration_from

_SCANNER: Any = json.JSONDecoder()  # configured like json.loads' own decoder
# Planning a compaction of a 100 MB session must not hold every entry as parsed JSON (about ten times the file in
# Python objects), and what a plan and the model's context depend on starts at the branch's last compaction's kept
# boundary (firstKeptEntryId). Digesting costs about half as much as parsing, and most of it is wasted on entries that
# a later compaction makes cold. So a line is digested as it is parsed only until the first compaction, and whenever
# more than RAW_BUDGET bytes have followed the last one; otherwise its raw bytes are kept and digested at the end if
# still needed. A file without compactions is thus parsed once, a file with frequent ones digests little more than its
# tail, and raw lines never take much memory.
RAW_BUDGET = 2_000_000  # bytes of raw lines held since the last compaction before digesting them

Digest = Callable[[Entry, int], Entry]
"""Cuts an entry down to what planning reads; the int is the entry's index, for ``BranchTail.load``."""
Loader = Callable[[Any], Message]
"""Gives a digested entry's whole message back, by the index its digest was made with."""


@dataclass(frozen=True)
class BranchTail:
    """The tail of the current branch that planning reads, root side first, and the load warnings.

    ``entries`` starts at the branch's last compaction's kept entry (or at that compaction, whichever
    comes first; at the root when the branch has no compaction). Entries are as ``digest`` made them;
    with ``compaction.digest``'s functions (estimating digests through ``load``) a dry run on them
    reports exactly what it reports on the whole branch. The thinking level and model of their
    context may differ (they come from the part left out).
    """

    entries: list[Entry]
    warnings: tuple[str, ...]
    load: Loader  # a digest's whole message, from the file (only while it is open)


class _FileChanged(Exception):
    """A line read again is not the line read first: the file was modified in place meanwhile."""


# One streaming pass validates every line (the same warnings as ``SessionStore.open``) and keeps, besides ids and
# parent ids, only the entries after the newest compaction's kept boundary, digested (``compaction/digest.py``'s
# ``digest_entry``: role, usage, file paths, serialized text; this module only stores what it returns). The branch
# tail is then taken from those or, should the branch leave that compaction behind, read again from the file, which
# stays open while the tail is in use: whole messages are read again from it for token estimates too (each line
# checked against a hash of the line first read). Anything unusual is left to ``SessionStore.open``.
#
# In ``whole`` mode (``session/lazy.py``, resuming a session) the reader keeps the parsed entries themselves instead
# of digests: keeping one costs nothing more than parsing it, so every line is kept as parsed until a compaction makes
# it cold.
class _LeanReader:
    """One streaming pass over a session file: ids of all entries, digests or raw lines of recent ones."""

    def __init__(self, handle: Any, name: str, digest: Digest, whole: bool = False) -> None:
        self.handle = handle
        self.name = name
        self.digest = digest
        self.whole = whole  # keep parsed entries, not digests (see the module docstring)
        self.warnings: list[str] = []
        self.ids: list[Any] = []
        self.parents: list[str | None] = []  # None for a parentId that is not a string
        self.compactions = bytearray()  # 1 where the entry is a compaction
        self.customs = bytearray()  # 1 where it is a custom entry (pins are: see session/pins.py)
        self.levels = bytearray()  # 1 where it is a thinking_level_change (the level a resume starts at)
        # Per entry: its digested entry, its raw line (see the module docstring), or None once cold.
        self.kept: list[Entry | bytes | None] = []
        self.where = array("q")  # per entry: offset, length and hash of its line
        self.by_id: dict[str, int] = {}
        self.demoted = 0  # entries before this index are cold
        self.held = 0  # bytes of the raw lines in ``kept``
        self.relinker = Relinker()
        self.size = 0  # bytes read
        self.ends_with_newline = True

    def read(self) -> Entry | None:
        """Stream the file; returns the header (None, having stopped early, unless it is a v3 one)."""
        header: Entry | None = None
        scan = _SCANNER.scan_once
        ids, parents, kept, where, by_id = self.ids, self.parents, self.kept, self.where, self.by_id
        compactions, customs, digest, whole = self.compactions, self.customs, self.digest, self.whole
        relinker = self.relinker
        eager = True  # digest each line now (see the module docstring)
        offset = 0
        number = 0
        for raw in self.handle:
            number += 1
            start = offset
            offset += len(raw)
            self.size = offset
            self.ends_with_newline = raw[-1:] == b"\n"
            body = raw[:-1] if raw[-1:] == b"\n" else raw
            # Fast path for the usual line, one JSON object: what json.loads would return, minus its
            # per-call overhead. Anything else takes the exact path, which classifies and warns.
            try:
                line = body.decode("utf-8")
                value, end = scan(line, 0) if line[:1] == "{" else (None, -1)
            except (ValueError, StopIteration, RecursionError):  # (UnicodeDecodeError is a ValueError)
                line, value, end = "", None, -1
            warning = None
            if end != len(line) or type(value) is not dict:
                value, warning = parse_line(number, raw, self.name)
            else:
                warning = line_problem(number, value, self.name)
            if warning is not None:
                self.warnings.append(warning)
                if value is not None:
                    relinker.skip(value)
                continue
            if value is None:
                continue
            if header is None:
                # Not a session, or one that needs migrating: a full load's job, so stop reading now.
                if value.get("type") != "session" or not isinstance(value.get("id"), str):
                    return None
                if migration_from(value) is not None:
                    return None
                header = value
                continue
            index = len(ids)
            entry_id = value.get("id")
            ids.append(entry_id)
            parent = value.get("parentId")
            if type(parent) is str and relinker.skipped:
                parent = value["parentId"] = relinker.parent(parent)  # as a full load links it
            parents.append(parent if type(parent) is str else None)
            where.extend((start, len(raw), hash(raw)))
            if isinstance(entry_id, str):
                by_id[entry_id] = index
            if eager:
                kept.append(value if whole else digest(value, index))
            else:
                kept.append(raw)
                self.held += len(raw)
            kind = value.get("type")
            customs.append(kind == "custom")
            self.levels.append(kind == "thinking_level_change")
            if kind == "compaction":
                compactions.append(1)
                kept_id = value.get("firstKeptEntryId")
                kept_index = by_id.get(kept_id) if isinstance(kept_id, str) else None
                self._demote(kept_index if kept_index is not None and kept_index < index else index)
                eager = whole
            else:
                compactions.append(0)
                if not eager and self.held > RAW_BUDGET:
                    self._digest_held()
                    eager = True
        return header

    def _demote(self, end: int) -> None:
        kept = self.kept
        for index in range(self.demoted, end):
            entry = kept[index]
            if type(entry) is bytes:
                self.held -= len(entry)
            kept[index] = None
        self.demoted = max(self.demoted, end)

    def _digest_held(self) -> None:
        kept = self.kept
        for index in range(self.demoted, len(kept)):
            entry = kept[index]
            if type(entry) is bytes:
                kept[index] = self.digest(self.relinked(_parsed(entry)), index)
        self.held = 0

    def _reread(self, index: int) -> bytes:
        offset, length, line_hash = self.where[3 * index : 3 * index + 3]
        raw = os.pread(self.handle.fileno(), length, offset)
        if len(raw) != length or hash(raw) != line_hash:
            raise _FileChanged()
        return raw

    def full(self, index: int) -> Entry:
        """The entry (digested unless ``whole``): as kept, from its kept line, or read again from the file.

        In ``whole`` mode an entry read again is kept, so that it is the same object every time.
        """
        kept = self.kept[index]
        if isinstance(kept, dict):
            return kept
        entry = self.relinked(_parsed(self._reread(index) if kept is None else kept))
        if self.whole:
            self.kept[index] = entry
            return entry
        return self.digest(entry, index)

    def peek(self, index: int) -> Entry:
        """The whole entry, like ``full`` in ``whole`` mode, but an older one is not kept afterwards."""
        kept = self.kept[index]
        if isinstance(kept, dict):
            return kept
        return self.relinked(_parsed(self._reread(index) if kept is None else kept))

    def relinked(self, entry: Entry) -> Entry:
        """A line parsed again, its parent linked past skipped entries as on the first read."""
        parent = entry.get("parentId")
        if type(parent) is str and parent in self.relinker.skipped:
            entry["parentId"] = self.relinker.parent(parent)
        return entry

    def message(self, index: Any) -> Message:
        """The whole message of the entry a digest was made from (its ``source``)."""
        try:
            message = _parsed(self._reread(index)).get("message")
        except _FileChanged:
            raise SessionError(f"{self.name} changed while it was being read; run the command again.") from None
        assert isinstance(message, dict)
        return message

    def branch_tail(self, leaf_id: Any = None) -> list[Entry]:
        """The path to ``leaf_id`` (default: the last entry) as SessionStore.branch() walks it, from the
        kept boundary on (see BranchTail)."""
        ids, parents, by_id = self.ids, self.parents, self.by_id
        if not ids:
            return []
        if leaf_id is None:
            leaf_id = ids[-1]
        current = by_id.get(leaf_id) if leaf_id else None
        # Walk from the leaf back to the boundary build_session_context and prepare_compaction use:
        # the last compaction on the path, or the path entry carrying its firstKeptEntryId when that
        # comes first. Entries before it are never visited. (Every path entry is by_id's entry for its
        # id, so an id occurs on a path once.)
        path: list[int] = []
        seen = bytearray(len(ids))  # a corrupt file may link entries in a loop
        compactions = self.compactions
        boundary = -1  # the tail's first entry as a position in ``path`` (leaf first); -1: the root
        kept_id: Any = None
        while current is not None and not seen[current]:
            seen[current] = 1
            path.append(current)
            if boundary < 0:
                if compactions[current]:
                    boundary = len(path) - 1
                    kept_id = self.full(current).get("firstKeptEntryId")
                    if any(ids[i] == kept_id for i in path[:-1]):
                        break  # its kept entry comes after it: the tail starts at the compaction
            elif ids[current] == kept_id:
                boundary = len(path) - 1
                break
            parent = parents[current]
            current = None if parent is None else by_id.get(parent)
        if boundary >= 0:
            del path[boundary + 1 :]
        path.reverse()
        held = self.kept
        return [entry if isinstance(entry := held[i], dict) else self.full(i) for i in path]


def _parsed(raw: bytes) -> Entry:
    """A line read before (so known to hold one JSON object) parsed again."""
    entry = json.loads((raw[:-1] if raw.endswith(b"\n") else raw).decode("utf-8"))
    assert isinstance(entry, dict)
    return entry


@contextmanager
def open_branch_tail(path: Path, digest: Digest) -> Iterator[BranchTail | None]:
    """The part of a v3 session file's current branch that planning reads; None when a full load must do.

    The file stays open in the ``with`` block, for ``BranchTail.load``. ``digest`` is applied to each
    entry kept (see the module docstring). None for
    anything unusual (missing or unreadable file, no header first, an older format that
    needs migrating, a file modified while read): ``SessionStore.open`` then handles the file and
    reports exactly as it always does. The warnings are those ``SessionStore.open`` gives.
    """
    try:
        handle = open(path, "rb")
    except OSError:
        yield None
        return
    with handle:
        tail: BranchTail | None = None
        try:
            with gc_paused():
                reader = _LeanReader(handle, str(path), digest)
                if reader.read() is not None:
                    tail = BranchTail(reader.branch_tail(), tuple(reader.warnings), reader.message)
        except (OSError, _FileChanged):
            tail = None
        yield tail
