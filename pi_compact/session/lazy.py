"""Resuming a session without holding all of it: every entry indexed, only the recent ones parsed.

``EntryIndex.read`` gives the current branch's tail at once and parses older entries again on demand;
files that need more care (no v3 header first, older versions, blank ones) get None: the full load.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from pi_compact.errors import SessionError
from pi_compact.session.branch_tail import _FileChanged, _LeanReader
from pi_compact.session.entries import Entry


def _as_is(entry: Entry, index: int) -> Entry:
    """No digest: ``whole`` mode keeps parsed entries (never called there; the reader wants one)."""
    return entry


# ``SessionStore.open`` reads a v3 session file with the lean reader of ``branch_tail.py`` in its ``whole``
# mode: one pass validates every line exactly as a full load does (the same warnings, the same skipped and
# relinked entries) and records each entry's id, parent and where its line is, but keeps parsed only the entries
# from the newest compaction's kept boundary on. The current branch from there (``tail``) is all that the
# model's context and a compaction plan need. An older entry is parsed again from its line when asked for, after
# checking the line against the hash of the line first read (a file changed in place meanwhile is an error,
# never a wrong entry), and ``all_entries`` builds the complete list the first time a command needs every entry.
# The full load (``jsonl.parse_lines``) reports the files left to it exactly as it always did.
class EntryIndex:
    """All entries of one session file by position; the recent ones (and any appended) in memory."""

    full_reads: ClassVar[int] = 0  # how many times an index was read in full (for tests to watch)

    def __init__(self, reader: _LeanReader, path: Path) -> None:
        self._reader = reader
        self._path = path

    @classmethod
    def read(cls, handle: Any, path: Path) -> tuple[Entry, EntryIndex] | None:
        """The header and the index of a v3 file read from ``handle``; None when a full load must do."""
        reader = _LeanReader(handle, str(path), _as_is, whole=True)
        header = reader.read()
        return None if header is None else (header, cls(reader, path))

    # ---- what the read found ---------------------------------------------------------------------

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._reader.warnings)

    @property
    def size(self) -> int:
        """Bytes read (the file's length then)."""
        return self._reader.size

    @property
    def ends_with_newline(self) -> bool:
        return self._reader.ends_with_newline

    @property
    def last_id(self) -> Any:
        """The id of the last entry (None when there is none): a full load's leaf."""
        ids = self._reader.ids
        return ids[-1] if ids else None

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._reader.by_id

    def __len__(self) -> int:
        return len(self._reader.ids)

    def compaction_count(self) -> int:
        return self._reader.compactions.count(1)

    # ---- entries ---------------------------------------------------------------------------------

    def tail(self, leaf_id: str | None) -> list[Entry]:
        """The path to ``leaf_id``, root side first, from its last compaction's kept entry on."""
        if leaf_id is None:
            return []
        with self._file():
            return self._reader.branch_tail(leaf_id)

    def customs_on_path(self, leaf_id: str | None, since: str | None, kind: str = "custom") -> tuple[list[Entry], bool]:
        """``customs_on_path`` over the index: the walk reads ids and parents only, and of the bodies only
        the ``kind`` entries it meets (read again from the file if old), so no full read is needed."""
        reader = self._reader
        ids, parents, by_id = reader.ids, reader.parents, reader.by_id
        customs = reader.levels if kind == "thinking_level_change" else reader.customs  # the kinds it marks
        found: list[int] = []
        current = by_id.get(leaf_id) if leaf_id is not None else None
        met = False
        for _ in range(len(ids)):  # a parent loop cannot make it run forever
            if current is None:
                break
            if since is not None and ids[current] == since:
                met = True
                break
            if customs[current]:
                found.append(current)
            parent = parents[current]
            current = by_id.get(parent) if parent is not None else None
        with self._file():
            return [reader.full(index) for index in reversed(found)], met

    def path_back(self, leaf_id: str | None, count: int) -> tuple[list[Entry], bool]:
        """The newest ``count`` entries on the path to ``leaf_id``, root side first, and whether older ones
        are on it: the walk reads ids and parents, and parses only the entries it returns."""
        reader = self._reader
        by_id, parents = reader.by_id, reader.parents
        found: list[int] = []
        current = by_id.get(leaf_id) if leaf_id is not None else None
        for _ in range(len(reader.ids)):
            if current is None or len(found) == count:
                break
            found.append(current)
            parent = parents[current]
            current = by_id.get(parent) if parent is not None else None
        with self._file():
            return [reader.full(index) for index in reversed(found)], current is not None

    def all_entries(self) -> list[Entry]:
        """Every entry in file order (then the appended ones); recent ones are the objects in memory."""
        reader = self._reader
        EntryIndex.full_reads += 1
        with self._file():
            return [reader.full(index) for index in range(len(reader.ids))]

    def each_entry(self) -> Iterator[Entry]:
        """Every entry in file order, for one pass over all of them (totals): unlike ``all_entries``,
        older entries are parsed one at a time and dropped, so memory stays as lean as the index."""
        reader = self._reader
        with self._file():
            for index in range(len(reader.ids)):
                yield reader.peek(index)

    @contextmanager
    def _file(self) -> Iterator[None]:
        """The file, for reading older entries again (opened only if one is read)."""
        handle = _OnDemand(self._path)
        self._reader.handle = handle
        try:
            yield
        except (OSError, _FileChanged) as exc:
            raise SessionError(
                f"{self._path} was changed or removed by another program since pi-compact read it, so its "
                "older entries cannot be read; open it again to continue."
            ) from exc
        finally:
            handle.close()

    # ---- appending -------------------------------------------------------------------------------

    def add(self, entry: Entry) -> None:
        """Index an entry appended after the read (kept in memory: it has no line to be read from yet)."""
        reader = self._reader
        index = len(reader.ids)
        entry_id = entry.get("id")
        parent = entry.get("parentId")
        reader.ids.append(entry_id)
        reader.parents.append(parent if type(parent) is str else None)
        reader.compactions.append(1 if entry.get("type") == "compaction" else 0)
        reader.customs.append(entry.get("type") == "custom")
        reader.levels.append(entry.get("type") == "thinking_level_change")
        reader.kept.append(entry)
        reader.where.extend((0, 0, 0))
        if isinstance(entry_id, str):
            reader.by_id[entry_id] = index

    def remove_last(self) -> None:
        """Forget the entry ``add`` indexed last (its write failed)."""
        reader = self._reader
        entry_id = reader.ids.pop()
        reader.parents.pop()
        reader.compactions.pop()
        reader.customs.pop()
        reader.levels.pop()
        reader.kept.pop()
        del reader.where[-3:]
        if isinstance(entry_id, str):
            del reader.by_id[entry_id]


def tail_start(path: Sequence[Mapping[str, Any]]) -> int:
    """Where ``EntryIndex.tail`` starts on a whole root-first path: its last compaction's kept entry,
    or that compaction when it comes first or its kept entry is not on the path; 0 without one."""
    for position in range(len(path) - 1, -1, -1):
        if path[position].get("type") == "compaction":
            kept_id = path[position].get("firstKeptEntryId")
            kept = next((p for p, entry in enumerate(path) if entry.get("id") == kept_id), None)
            return position if kept is None else min(kept, position)
    return 0


def customs_on_path(
    by_id: Mapping[str, Entry], leaf_id: str | None, since: str | None, kind: str = "custom"
) -> tuple[list[Entry], bool]:
    """The ``kind`` entries (``custom`` or ``thinking_level_change``) on the path to ``leaf_id`` that come after
    the entry ``since``, root side first, and whether ``since`` is on that path (else all of the path's)."""
    found: list[Entry] = []
    current = by_id.get(leaf_id) if leaf_id is not None else None
    for _ in range(len(by_id)):
        if current is None:
            break
        if since is not None and current.get("id") == since:
            return found[::-1], True
        if current.get("type") == kind:
            found.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    return found[::-1], False


class _OnDemand:
    """A file opened for reading at the first ``fileno()`` (what ``_LeanReader`` reads lines with)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._file: BinaryIO | None = None

    def fileno(self) -> int:
        if self._file is None:
            self._file = open(self._path, "rb")
        return self._file.fileno()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
