"""SessionStore: a session's entries in memory and the only code that writes session files (pi's JSONL, v3).

Appends never rewrite existing lines, every write is all or nothing under the session's lock, and
nothing is written before the first answer. Reading a file (bad lines skipped with a warning naming
file and line, old versions migrated, v3 read lean) is ``reading.py``'s.
"""

from __future__ import annotations

import os
from collections.abc import Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pi_compact.errors import SessionError
from pi_compact.jstext import dumps_json
from pi_compact.messages import Message
from pi_compact.paths import ensure_private_dir
from pi_compact.session.collector import freeze_loaded, gc_paused
from pi_compact.session.context import SessionContext, build_session_context, index_by_id, path_to
from pi_compact.session.entries import Entry, ms_to_iso, new_entry_id, new_header
from pi_compact.session.jsonl import LoadedFile, parse_line
from pi_compact.session.lazy import EntryIndex, customs_on_path, tail_start
from pi_compact.session.lock import SessionLock
from pi_compact.session.reading import parse_session_text, read_session_file
from pi_compact.session.tree import branch_copy
from pi_compact.session.writes import (
    FileState,
    WriteFailed,
    append_bytes,
    current_state,
    ends_turn,
    not_saved,
    replace_contents,
    sync_file,
    write_backup,
)

__all__ = ["LoadedFile", "SessionStore", "gc_paused", "new_header", "parse_line", "parse_session_text"]


# The file is read by ``reading.py``; this is the session in memory and the append API that mirrors it.
#
# A live session (``hold``) keeps the lock from opening (or its first write) until ``close``, so that ``compact FILE``
# or a second session on the same file is refused instead of writing behind its back.
class SessionStore:
    """A session's entries in memory, mirrored to a JSONL file unless in-memory."""

    def __init__(
        self, path: Path | None, header: Entry, entries: list[Entry], *, warnings: Iterable[str] = (),
        on_disk: FileState | None = None, header_on_disk: bool = False, needs_rewrite: bool = False,
        needs_newline: bool = False, lock: SessionLock | None = None, hold: bool = False,
        index: EntryIndex | None = None, backup_tag: str | None = None,
    ) -> None:
        self.path = path
        self.header = header
        self.warnings = tuple(warnings)
        # With an ``index`` (a resumed file, see lazy.py) the entries are read when first asked for.
        self._index = index
        self._entries: list[Entry] | None = None if index is not None else entries
        self._by_id: dict[str, Entry] | None = None if index is not None else index_by_id(entries)
        last = index.last_id if index is not None else entries[-1].get("id") if entries else None
        self.leaf_id: str | None = last
        self._pending: list[Entry] = [] if header_on_disk else list(entries)  # appended, not yet on disk
        self._unsynced = False  # lines written but not yet fsynced (see _append_pending)
        self._header_on_disk = header_on_disk and not needs_rewrite
        self._needs_rewrite = needs_rewrite
        self._backup_tag = backup_tag  # copy the file to NAME.<tag>.bak before rewriting it (a migrated one)
        self._needs_newline = needs_newline
        self._on_disk = on_disk  # the file as we last read or wrote it (None: there was none)
        self._lock = lock
        self._hold = hold  # keep the lock between writes

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def in_memory(cls, cwd: str, now_ms: int) -> SessionStore:
        """A session that is never written to disk (``--no-session``)."""
        return cls(None, new_header(cwd, now_ms), [])

    @classmethod
    def create(
        cls, path: Path, cwd: str, now_ms: int, session_id: str | None = None, *, hold: bool = False
    ) -> SessionStore:
        """A new session that will live at ``path`` (written lazily; ``hold``: locked from then on)."""
        return cls(path, new_header(cwd, now_ms, session_id), [], hold=hold)

    @classmethod
    def open(cls, path: Path, cwd: str, now_ms: int, *, hold: bool = False) -> SessionStore:
        """Open an existing file (or start a new session there when it is absent or blank).

        ``hold`` takes the session's lock first and keeps it (a live session, ``compact``): another
        writer is then refused until ``close``. Without it the lock is taken for each write only.
        """
        lock = _acquire(path) if hold else None
        read = read_session_file(path)
        if read.header is None:  # absent or blank: a new session there
            return cls(path, new_header(cwd, now_ms), [], on_disk=read.on_disk, needs_rewrite=read.needs_rewrite,
                       lock=lock, hold=hold)
        return cls(
            path, read.header, read.entries, warnings=read.warnings, on_disk=read.on_disk, header_on_disk=True,
            needs_rewrite=read.needs_rewrite, needs_newline=read.needs_newline, lock=lock, hold=hold,
            index=read.index, backup_tag=read.backup_tag,
        )

    # ---- reading --------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return str(self.header.get("id", ""))

    @property
    def entries(self) -> list[Entry]:
        """Every entry, in file order (read in full on first use by a resumed store)."""
        if self._entries is None:
            self._read_all()
        assert self._entries is not None
        return self._entries

    @property
    def by_id(self) -> dict[str, Entry]:
        """Every entry with an id, by id (read in full on first use by a resumed store)."""
        if self._by_id is None:
            self._read_all()
        assert self._by_id is not None
        return self._by_id

    def _read_all(self) -> None:
        assert self._index is not None
        with gc_paused():
            entries = self._index.all_entries()
            self._entries, self._by_id, self._index = entries, index_by_id(entries), None
        freeze_loaded()

    def each_entry(self) -> Iterator[Entry]:
        """Every entry in file order; a resumed store reads its older ones one at a time, not for good."""
        return self._index.each_entry() if self._index is not None else iter(self.entries)

    def entry_count(self) -> int:
        """How many entries the session holds (``len(entries)`` without reading them)."""
        return len(self._index) if self._index is not None else len(self.entries)

    def compaction_count(self) -> int:
        """How many compaction entries the file holds (on every branch)."""
        if self._index is not None:
            return self._index.compaction_count()
        return sum(1 for e in self.entries if e.get("type") == "compaction")

    def branch(self) -> list[Entry]:
        """The current path, root first (pi's getBranch)."""
        leaf = self.by_id.get(self.leaf_id) if self.leaf_id else None
        return path_to(leaf, self.by_id)

    def branch_tail(self) -> list[Entry]:
        """The current path from its last compaction's kept entry on (or that compaction, whichever
        comes first; all of it without a compaction): everything the model's context and a compaction
        plan are made of. Unlike ``branch`` it does not read older entries of a resumed session."""
        if self._index is not None:
            return self._index.tail(self.leaf_id)
        branch = self.branch()
        return branch[tail_start(branch) :]

    def path_back(self, count: int) -> tuple[list[Entry], bool]:
        """The newest ``count`` entries of the current path, root first, and whether older ones are on it
        (a resumed store parses only those: the transcript shown on opening reads back past a compaction)."""
        if self._index is not None:
            return self._index.path_back(self.leaf_id, count)
        branch = self.branch()
        return branch[-count:] if count > 0 else [], len(branch) > count

    def customs_on_path(self, leaf_id: str | None, since: str | None, kind: str = "custom") -> tuple[list[Entry], bool]:
        """The ``kind`` entries (custom: pins among them; thinking_level_change) on the path to ``leaf_id`` after
        ``since``, root first, and whether ``since`` is on it. A resumed store reads only those (see lazy.py)."""
        if self._index is not None:
            return self._index.customs_on_path(leaf_id, since, kind)
        return customs_on_path(self.by_id, leaf_id, since, kind)

    def context(self) -> SessionContext:
        """What the model sees from the current leaf."""
        return build_session_context(self.entries, self.leaf_id, self.by_id)

    # ---- the tree -------------------------------------------------------------------------------

    def move_leaf(self, entry_id: str | None) -> None:
        """Hang the next entry from ``entry_id`` (None: a new root), as pi's branch(); writes nothing."""
        ids: Container[str] = self._index if self._index is not None else self.by_id
        if entry_id is not None and entry_id not in ids:
            raise SessionError(f"Entry {entry_id} is not in {self.path or 'this session'}.")
        self.leaf_id = entry_id

    def clone_branch(self, path: Path, leaf_id: str | None, now_ms: int, session_id: str | None = None) -> SessionStore:
        """A new session at ``path`` holding the branch to ``leaf_id`` (pi's createBranchedSession): its
        header names this file as ``parentSession``; written now if it holds an answer, else lazily."""
        header = new_header(str(self.header.get("cwd", "")), now_ms, session_id)
        if self.path is not None:
            header["parentSession"] = str(self.path)
        clone = SessionStore(path, header, branch_copy(self.by_id, leaf_id), hold=True)
        if clone.entries and clone._has_assistant():
            clone._flush(clone.entries[-1])
        return clone

    # ---- the lock ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Sync and release the lock, if held; the store may still be read (and written, locking each write)."""
        try:
            self.sync()
        except OSError:
            pass  # every line is complete on disk already; only power-failure safety is at stake
        self._hold = False
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ---- writing --------------------------------------------------------------------------------

    # Like pi, nothing is written until the session holds an assistant message, so a prompt that never got an answer
    # leaves no file behind. The one rewrite: the first append to a v1/v2 (or blank) file first rewrites it as v3
    # atomically (as pi does), because appended v3 entries must reference the ids that migration assigned; a v1/v2
    # file is first copied beside itself (``write_backup``), and the rewrite is refused if that copy fails.
    #
    # Writes are all or nothing (``writes.py``): a failed one leaves the file as it was, the entry is dropped from
    # memory too (the next entry is never parented to one that is not on disk), and one ``SessionError`` sentence says
    # so. Durability: every line is written completely before ``append`` returns, so killing the process never loses
    # one; fsync is grouped by turn (``ends_turn``): a user prompt or tool result is synced with the reply that
    # follows it, everything else at once, so a power failure can lose at most the lines since the last reply.
    def append(self, fields: Mapping[str, Any], now_ms: int) -> Entry:
        """Add an entry after the current leaf and persist it; returns the stored entry.

        Raises ``SessionError`` when it cannot be written; the store is then as before the call.
        """
        previous_leaf = self.leaf_id
        ids: Container[str] = self._index if self._index is not None else self.by_id
        entry: Entry = {"type": fields["type"], "id": new_entry_id(ids), "parentId": previous_leaf,
                        "timestamp": ms_to_iso(now_ms)}
        entry.update({k: v for k, v in fields.items() if k != "type"})
        if self._index is not None:
            self._index.add(entry)
        else:
            self.entries.append(entry)
            self.by_id[entry["id"]] = entry
        self._pending.append(entry)
        self.leaf_id = entry["id"]
        try:
            self._flush(entry)
        except BaseException:
            if self._pending and self._pending[-1] is entry:
                self._pending.pop()
            if self._index is not None:
                self._index.remove_last()
            else:
                self.entries.pop()
                del self.by_id[entry["id"]]
            self.leaf_id = previous_leaf
            raise
        return entry

    def append_message(self, message: Message, now_ms: int, fields: Mapping[str, Any] | None = None) -> Entry:
        """A ``message`` entry (``fields``: ours beside pi's, which pi ignores)."""
        return self.append({"type": "message", "message": dict(message), **(fields or {})}, now_ms)

    def _flush(self, entry: Entry) -> None:
        if self.path is None:
            return
        if not self._header_on_disk and not self._has_assistant():
            return  # pi's lazy start: no file until the first answer
        if self._lock is None or not self._lock.held:
            try:
                ensure_private_dir(Path(os.path.realpath(self.path)).parent)
                self._lock = SessionLock.acquire(self.path)
            except OSError as exc:
                raise not_saved(self.path, entry, exc, rolled_back=True) from exc
        try:
            self._check_unchanged()
            if self._needs_rewrite:
                self._rewrite()
            else:
                self._append_pending()
        except WriteFailed as failed:
            if not failed.rolled_back:
                # Part of a line may be left: the next append starts on a fresh line, and the torn
                # one is skipped when the file is read again.
                self._needs_newline = True
                self._on_disk = current_state(self.path)
            raise not_saved(self.path, entry, failed.error, failed.rolled_back) from failed.error
        finally:
            if not self._hold:
                self._release()

    # Every write first checks that the file is still as this store last read or wrote it: if another program (pi,
    # say) appended meanwhile, it refuses rather than append entries whose parent is no longer the file's latest.
    def _check_unchanged(self) -> None:
        """Refuse to write when another program changed the file since we last read or wrote it."""
        assert self.path is not None
        now = current_state(self.path)
        if self._on_disk is None:
            if now is not None and now.size > 0:
                raise SessionError(
                    f"{self.path} was created by another program meanwhile, so nothing was written to it; "
                    "open it (--session) to continue that session."
                )
        elif now != self._on_disk:
            raise SessionError(
                f"{self.path} was changed by another program since pi-compact read it, so nothing more was "
                "written to it (that would cut off the other program's entries); open it again to continue."
            )

    def _append_pending(self) -> None:
        """Append the pending entries; fsync only when one ends a turn (see the module docstring).

        A kill -9 loses no line written here even unsynced: the written data is in the page cache.
        """
        assert self.path is not None
        lines: list[str] = []
        if not self._header_on_disk:
            lines.append(dumps_json(self.header))
        lines.extend(dumps_json(entry) for entry in self._pending)
        if not lines:
            return
        prefix = "\n" if self._needs_newline else ""
        data = (prefix + "\n".join(lines) + "\n").encode("utf-8")
        sync = not self._header_on_disk or any(ends_turn(entry) for entry in self._pending)
        self._on_disk = append_bytes(self.path, data, sync=sync)
        self._unsynced = not sync
        self._header_on_disk = True
        self._needs_newline = False
        self._pending.clear()

    def sync(self) -> None:
        """fsync the lines ``_append_pending`` left unsynced (closing does this too)."""
        if self._unsynced and self.path is not None:
            sync_file(self.path)
            self._unsynced = False

    def _rewrite(self) -> None:
        assert self.path is not None
        if self._backup_tag is not None:  # never replace a file that was read differently without keeping it
            write_backup(self.path, self._backup_tag)
            self._backup_tag = None
        body = "\n".join(dumps_json(e) for e in [self.header, *self.entries]) + "\n"
        self._on_disk = replace_contents(self.path, body.encode("utf-8"))
        self._needs_rewrite = False
        self._needs_newline = False
        self._header_on_disk = True
        self._unsynced = False
        self._pending.clear()

    def _has_assistant(self) -> bool:
        return any(e.get("type") == "message" and (e.get("message") or {}).get("role") == "assistant"
                   for e in self.entries)


def _acquire(path: Path) -> SessionLock | None:
    """The session's lock, or None when its sidecar cannot be made (the first write will say why)."""
    try:
        return SessionLock.acquire(path)
    except OSError:
        return None
