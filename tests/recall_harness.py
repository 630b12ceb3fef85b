"""A session store opened over written entries, for the recall tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import (
    write_session,
)

from pi_compact.session.store import SessionStore


def open_store(tmp_path: Path, entries: list[dict[str, Any]]) -> SessionStore:
    path = tmp_path / "session.jsonl"
    write_session(path, entries)
    return SessionStore.open(path, str(tmp_path), 0)
