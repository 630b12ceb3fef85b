"""A lean read of a session file's current branch: only the tail that planning a compaction reads.

Planning a compaction of a 100 MB session must not hold every entry as parsed JSON (about 4x the
file in Python objects). What a plan and the model's context depend on starts at the branch's last
compaction: from its kept boundary (firstKeptEntryId) onward. So one streaming pass validates every
line (the same warnings as ``SessionStore.open``) but keeps, besides ids and parent ids, only the
entries after the newest compaction's kept boundary; the branch tail is then taken from those or,
should the branch leave that compaction behind, read again from the still open file (checked against
a hash of the line first read). Anything unusual is left to ``SessionStore.open``."""

from __future__ import annotations

import json
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_compact.session.entries import CURRENT_VERSION, Entry
from pi_compact.session.migrate import file_version
from pi_compact.session.store import gc_paused, parse_line

_SCANNER: Any = json.JSONDecoder()  # configured like json.loads' own decoder


@dataclass(frozen=True)
class BranchTail:
    """The tail of the current branch that planning reads, root side first, and the load warnings.

    ``entries`` starts at the branch's last compaction's kept entry (or at that compaction, whichever
    comes first; at the root when the branch has no compaction). Context messages, token estimates
    and the compaction plan computed from it equal those of the whole branch; the thinking level and
    model of its context may not (they come from the part left out).
    """

    entries: list[Entry]
    warnings: tuple[str, ...]


class _FileChanged(Exception):
    """A line read again is not the line read first: the file was modified in place meanwhile."""


class _LeanReader:
    """One streaming pass over a session file: ids for all entries, raw lines for the recent ones."""

    def __init__(self, handle: Any, name: str) -> None:
        self.handle = handle
        self.name = name
        self.warnings: list[str] = []
        self.ids: list[Any] = []
        self.parents: list[Any] = []
        self.compactions = bytearray()  # 1 where the entry is a compaction
        # Per entry, until a compaction makes it cold: the parsed entry while no compaction has been
        # seen (a file without one needs them all: parse once), its raw line after that (dropping a
        # line costs nothing, dropping a parsed entry a while after parsing it costs half the parse).
        self.kept: list[Entry | bytes | None] = []
        self.where = array("q")  # per entry: offset, length and hash of its line
        self.by_id: dict[str, int] = {}
        self.demoted = 0  # entries before this index are cold

    def read(self) -> Entry | None:
        """Stream the file; returns the header (None, having stopped early, unless it is a v3 one)."""
        header: Entry | None = None
        scan = _SCANNER.scan_once
        ids, parents, kept, where, by_id = self.ids, self.parents, self.kept, self.where, self.by_id
        parsed = True
        offset = 0
        number = 0
        for raw in self.handle:
            number += 1
            start = offset
            offset += len(raw)
            unterminated = raw[-1:] != b"\n"
            line = (raw if unterminated else raw[:-1]).decode("utf-8")
            # Fast path for the usual line, one JSON object: what json.loads would return, minus its
            # per-call overhead. Anything else takes the exact path, which classifies and warns.
            try:
                value, end = scan(line, 0) if line[:1] == "{" else (None, -1)
            except (ValueError, StopIteration):
                value, end = None, -1
            if end != len(line) or type(value) is not dict:
                value, warning = parse_line(number, line, unterminated, self.name)
                if warning is not None:
                    self.warnings.append(warning)
                if value is None:
                    continue
            if header is None:
                # Not a session, or one that needs migrating: a full load's job, so stop reading now.
                if value.get("type") != "session" or not isinstance(value.get("id"), str):
                    return None
                if file_version(value) < CURRENT_VERSION:
                    return None
                header = value
                continue
            index = len(ids)
            entry_id = value.get("id")
            ids.append(entry_id)
            parents.append(value.get("parentId"))
            kept.append(value if parsed else raw)
            where.extend((start, len(raw), hash(raw)))
            if isinstance(entry_id, str):
                by_id[entry_id] = index
            if value.get("type") == "compaction":
                self.compactions.append(1)
                parsed = False
                kept_id = value.get("firstKeptEntryId")
                kept_index = by_id.get(kept_id) if isinstance(kept_id, str) else None
                self._demote(kept_index if kept_index is not None and kept_index < index else index)
            else:
                self.compactions.append(0)
        return header

    def _demote(self, end: int) -> None:
        kept = self.kept
        for index in range(self.demoted, end):
            kept[index] = None
        self.demoted = max(self.demoted, end)

    def full(self, index: int) -> Entry:
        """The whole entry: as kept, parsed from its kept line, or read again from the file.

        Each entry is handed out once from memory (a second call reads the file), so a caller may
        keep and change what it gets.
        """
        kept = self.kept[index]
        self.kept[index] = None
        if isinstance(kept, dict):
            return kept
        if kept is None:
            offset, length, digest = self.where[3 * index : 3 * index + 3]
            kept = os.pread(self.handle.fileno(), length, offset)
            if len(kept) != length or hash(kept) != digest:
                raise _FileChanged()
        raw = kept
        entry = json.loads((raw[:-1] if raw.endswith(b"\n") else raw).decode("utf-8"))
        assert isinstance(entry, dict)
        return entry

    def branch_tail(self) -> list[Entry]:
        """The leaf's path as SessionStore.branch() walks it, from the kept boundary on (see BranchTail)."""
        ids, parents, by_id = self.ids, self.parents, self.by_id
        if not ids:
            return []
        leaf_id = ids[-1]
        current = by_id.get(leaf_id) if leaf_id else None
        path: list[int] = []
        seen: set[int] = set()
        while current is not None and current not in seen:
            seen.add(current)
            path.append(current)
            parent = parents[current]
            current = by_id.get(parent) if isinstance(parent, str) else None
        path.reverse()
        # The boundary build_session_context and prepare_compaction use: the last compaction on the
        # path, and the first path entry carrying its firstKeptEntryId.
        start = 0
        for position in range(len(path) - 1, -1, -1):
            if self.compactions[path[position]]:
                kept_id = self.full(path[position]).get("firstKeptEntryId")
                kept = next((p for p, i in enumerate(path) if ids[i] == kept_id), None)
                start = position if kept is None else min(kept, position)
                break
        return [self.full(i) for i in path[start:]]


def read_branch_tail(path: Path) -> BranchTail | None:
    """The part of a v3 session file's current branch that planning reads; None when a full load must do.

    None for anything unusual (missing or unreadable file, bad UTF-8, no header first, an older
    format that needs migrating, a file modified while read): ``SessionStore.open`` then handles the
    file and reports exactly as it always does. The warnings are those ``SessionStore.open`` gives.
    """
    try:
        with open(path, "rb") as handle, gc_paused():
            reader = _LeanReader(handle, str(path))
            if reader.read() is None:
                return None
            return BranchTail(reader.branch_tail(), tuple(reader.warnings))
    except (OSError, UnicodeDecodeError, _FileChanged):
        return None
