"""SessionStore: the only code that reads or writes session files (pi's JSONL, version 3).

Loading skips malformed lines (each reported with file and line number), ignores a torn last line
left by a crash, and migrates v1/v2 files in memory. Appending writes one JSON line per entry,
flushed and fsynced, and never rewrites existing lines; the one exception is the first append to a
v1/v2 file, which first rewrites the file as v3 atomically (as pi does), because appended v3 entries
must reference the ids that migration assigned. Like pi, nothing is written until the session holds
an assistant message, so a prompt that never got an answer leaves no file behind.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pi_compact.errors import SessionError
from pi_compact.jstext import dumps_json
from pi_compact.messages import Message
from pi_compact.session.context import SessionContext, build_session_context, index_by_id, path_to
from pi_compact.session.entries import CURRENT_VERSION, Entry, ms_to_iso, new_entry_id
from pi_compact.session.migrate import migrate


@dataclass(frozen=True)
class LoadedFile:
    """What parsing a session file produced."""

    header: Entry | None
    entries: list[Entry]
    warnings: tuple[str, ...]
    ends_with_newline: bool


def parse_line(number: int, line: str, unterminated: bool, name: str) -> tuple[Entry | None, str | None]:
    """One line of a session file: the entry, or a warning (both None for a blank line)."""
    if not line.strip():
        return None, None
    try:
        value = json.loads(line)
    except ValueError:
        if unterminated:
            return None, f"{name}: line {number} is incomplete (interrupted write); ignored it."
        return None, f"{name}: line {number} is not valid JSON; skipped it."
    if not isinstance(value, dict):
        return None, f"{name}: line {number} is not a JSON object; skipped it."
    return value, None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many containers that all survive: it would rescan them
    over and over (it doubles the load time of a 100 MB session) and find no garbage."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_session_text(text: str, name: str = "<session>") -> LoadedFile:
    """Parse JSONL text: header first, bad lines skipped with a warning, a torn tail ignored."""
    lines = text.split("\n")
    warnings: list[str] = []
    parsed: list[Entry] = []
    last = len(lines) - 1
    torn_tail = not text.endswith("\n")
    with gc_paused():
        for number, line in enumerate(lines, start=1):
            value, warning = parse_line(number, line, torn_tail and number - 1 == last, name)
            if warning is not None:
                warnings.append(warning)
            elif value is not None:
                parsed.append(value)
    if not parsed or parsed[0].get("type") != "session" or not isinstance(parsed[0].get("id"), str):
        return LoadedFile(None, [], tuple(warnings), text.endswith("\n") or not text)
    return LoadedFile(parsed[0], parsed[1:], tuple(warnings), text.endswith("\n") or not text)


def new_header(cwd: str, now_ms: int, session_id: str | None = None) -> Entry:
    """A fresh v3 session header; its id is a UUIDv7 of ``now_ms``, as pi makes every session id."""
    # Imported here, not at the top: uuid costs ~4 ms of start-up that reading a session never needs.
    from pi_compact.paths import new_session_id

    return {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id or new_session_id(datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc)),
        "timestamp": ms_to_iso(now_ms),
        "cwd": cwd,
    }


class SessionStore:
    """A session's entries in memory, mirrored to a JSONL file unless in-memory."""

    def __init__(
        self, path: Path | None, header: Entry, entries: list[Entry], *, warnings: Iterable[str] = (),
        persisted_lines: int = 0, needs_rewrite: bool = False, needs_newline: bool = False,
    ) -> None:
        self.path = path
        self.header = header
        self.entries = entries
        self.warnings = tuple(warnings)
        self.by_id = index_by_id(entries)
        self.leaf_id: str | None = entries[-1].get("id") if entries else None
        self._persisted = persisted_lines  # entries already on disk
        self._needs_rewrite = needs_rewrite
        self._needs_newline = needs_newline
        self._header_on_disk = persisted_lines > 0 or (path is not None and not needs_rewrite and _has_bytes(path))

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def in_memory(cls, cwd: str, now_ms: int) -> SessionStore:
        """A session that is never written to disk (``--no-session``)."""
        return cls(None, new_header(cwd, now_ms), [])

    @classmethod
    def create(cls, path: Path, cwd: str, now_ms: int, session_id: str | None = None) -> SessionStore:
        """A new session that will live at ``path`` (written lazily)."""
        return cls(path, new_header(cwd, now_ms, session_id), [])

    @classmethod
    def open(cls, path: Path, cwd: str, now_ms: int) -> SessionStore:
        """Open an existing file (or start a new session there when it is absent or empty)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls.create(path, cwd, now_ms)
        except OSError as exc:
            raise SessionError(f"Cannot read session file {path}: {exc.strerror}.") from exc
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SessionError(f"{path} is not a UTF-8 text file, so it is not a pi session file.") from exc
        if not text.strip():
            return cls(path, new_header(cwd, now_ms), [], needs_rewrite=True)
        loaded = parse_session_text(text, str(path))
        if loaded.header is None:
            raise SessionError(
                f"{path} does not start with a pi session header, so it is not a session file; "
                "pass another file or move it away."
            )
        entries = loaded.entries
        migrated = migrate(loaded.header, entries)
        return cls(
            path, loaded.header, entries, warnings=loaded.warnings, persisted_lines=len(entries),
            needs_rewrite=migrated, needs_newline=not loaded.ends_with_newline,
        )

    # ---- reading --------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return str(self.header.get("id", ""))

    def branch(self) -> list[Entry]:
        """The current path, root first (pi's getBranch)."""
        leaf = self.by_id.get(self.leaf_id) if self.leaf_id else None
        return path_to(leaf, self.by_id)

    def context(self) -> SessionContext:
        """What the model sees from the current leaf."""
        return build_session_context(self.entries, self.leaf_id, self.by_id)

    # ---- writing --------------------------------------------------------------------------------

    def append(self, fields: Mapping[str, Any], now_ms: int) -> Entry:
        """Add an entry after the current leaf and persist it; returns the stored entry."""
        entry: Entry = {"type": fields["type"], "id": new_entry_id(self.by_id), "parentId": self.leaf_id,
                        "timestamp": ms_to_iso(now_ms)}
        entry.update({k: v for k, v in fields.items() if k != "type"})
        self.entries.append(entry)
        self.by_id[entry["id"]] = entry
        self.leaf_id = entry["id"]
        self._flush()
        return entry

    def append_message(self, message: Message, now_ms: int) -> Entry:
        return self.append({"type": "message", "message": dict(message)}, now_ms)

    def _flush(self) -> None:
        if self.path is None:
            return
        if not self._header_on_disk and not self._has_assistant():
            return  # pi's lazy start: no file until the first answer
        if self._needs_rewrite:
            self._rewrite()
            return
        lines: list[str] = []
        if not self._header_on_disk:
            lines.append(dumps_json(self.header))
        lines.extend(dumps_json(entry) for entry in self.entries[self._persisted :])
        if not lines:
            return
        prefix = "\n" if self._needs_newline else ""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(prefix + "\n".join(lines) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self._header_on_disk = True
        self._needs_newline = False
        self._persisted = len(self.entries)

    def _rewrite(self) -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        body = "\n".join(dumps_json(e) for e in [self.header, *self.entries]) + "\n"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        self._needs_rewrite = False
        self._needs_newline = False
        self._header_on_disk = True
        self._persisted = len(self.entries)

    def _has_assistant(self) -> bool:
        return any(
            e.get("type") == "message" and (e.get("message") or {}).get("role") == "assistant"
            for e in self.entries
        )


def _has_bytes(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
