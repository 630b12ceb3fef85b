"""Reading a session file (pi's JSONL): what it holds and how it has to be written next.

``read_session_file`` reads the file line by line as bytes (``jsonl.py``): a malformed, non-UTF-8 or
wrongly shaped line is skipped and reported with file and line number, a torn last line left by a crash
is ignored, and v1/v2 files are migrated in memory (to be rewritten as v3, after a backup, at the first
save). A v3 file is read lean (``lazy.py``): every line is checked at once, but only the current branch
from its last compaction's kept entry on stays parsed; the rest is read again on demand. The store
(``store.py``) holds what this returns and appends to the file.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

from pi_compact.errors import SessionError
from pi_compact.session.collector import freeze_loaded, gc_paused
from pi_compact.session.entries import Entry
from pi_compact.session.jsonl import LoadedFile, parse_lines
from pi_compact.session.lazy import EntryIndex
from pi_compact.session.migrate import migrate, migration_from
from pi_compact.session.writes import FileState, backup_name


@dataclass(frozen=True)
class SessionFile:
    """A session file as read. ``header`` None: there is no session in it yet (absent, or blank: then
    ``needs_rewrite``). With an ``index`` (a lean v3 read) ``entries`` is empty and read on demand."""

    header: Entry | None
    entries: list[Entry] = field(default_factory=list, hash=False)
    warnings: tuple[str, ...] = ()
    on_disk: FileState | None = None  # the file as read (None: there was none)
    index: EntryIndex | None = field(default=None, hash=False)
    needs_rewrite: bool = False  # blank, or migrated from v1/v2: the first save rewrites it whole
    needs_newline: bool = False  # the last line has no newline: the next append starts a fresh line
    backup_tag: str | None = None  # copy the file to NAME.<tag>.bak before that rewrite (a migrated one)


def parse_session_text(text: str, name: str = "<session>") -> LoadedFile:
    """Parse JSONL text: header first, bad lines skipped with a warning, a torn tail ignored."""
    with gc_paused():
        return parse_lines(io.BytesIO(text.encode("utf-8", "surrogatepass")), name)


def read_session_file(path: Path) -> SessionFile:
    """Read ``path``; raises ``SessionError`` (one sentence naming it) when it cannot be read or is not a
    session file."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return SessionFile(None)
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {exc.strerror}.") from exc
    with handle, gc_paused():
        state = os.fstat(handle.fileno())
        try:
            indexed = EntryIndex.read(handle, path)
            if indexed is None:
                handle.seek(0)
                loaded = parse_lines(handle, str(path))
        except OSError as exc:
            raise SessionError(f"Cannot read session file {path}: {exc.strerror}.") from exc
    freeze_loaded()
    if indexed is not None:
        header, index = indexed
        return SessionFile(header, warnings=index.warnings, on_disk=FileState.of(state, index.size), index=index,
                           needs_newline=not index.ends_with_newline)
    on_disk = FileState.of(state, loaded.size)
    if loaded.blank:
        return SessionFile(None, on_disk=on_disk, needs_rewrite=True)
    if loaded.header is None:
        raise SessionError(
            f"{path} does not start with a pi session header, so it is not a session file; "
            "pass another file or move it away."
        )
    entries, warnings, source = loaded.entries, loaded.warnings, migration_from(loaded.header)
    if source is not None:
        migrate(loaded.header, entries)
        warnings += (f"{path} is a version {source} pi session: it is read as version 3 and rewritten so at the "
                     f"first save, which first copies the original to {backup_name(path, f'v{source}')}.",)
    return SessionFile(loaded.header, entries, tuple(warnings), on_disk, needs_rewrite=source is not None,
                       needs_newline=not loaded.ends_with_newline,
                       backup_tag=None if source is None else f"v{source}")
