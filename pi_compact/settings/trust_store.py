"""The remembered answers to the project trust question, one per directory, in the user's config.

Contract:
- The file is ``<agent dir>/pi-compact-trust.json``: ``{"version": 2, "projects": {resolved path:
  {"answer": "trust" | "ignore", "claims": fingerprint}}}``. It is written 0600 (atomically: a temporary
  file renamed over it), in a 0700 directory when the directory has to be created.
- A remembered "trust" holds only for the claims it was given for (``fingerprint``: a SHA-256 of every
  claim's key and whole value, extension files by the SHA-256 of their content): when the project's risky
  settings or extensions change (a ``git pull``), the question is asked again.
- Version 1 fingerprinted the values as shown, cut at 120 characters; its "trust" answers never match a
  version 2 fingerprint (which starts ``v2:``), so such a directory is simply asked again; "ignore" holds.
- A missing, unreadable or malformed file means "nothing remembered"; reading never writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pi_compact.durable import sync_directory
from pi_compact.paths import PathLike, agent_dir, ensure_private_dir

Remembered = Literal["trust", "ignore"]
STORE_NAME = "pi-compact-trust.json"


def store_path() -> Path:
    """Where the answers are kept (``$PI_CODING_AGENT_DIR`` honoured)."""
    return agent_dir() / STORE_NAME


def project_key(cwd: PathLike) -> str:
    """The directory an answer belongs to: the resolved path, so a symlink or ``..`` names the same one."""
    return os.fspath(Path(cwd).resolve())


def fingerprint(claims: Iterable[str]) -> str:
    """The hash of the risky settings an answer was given for (``Claim.canonical`` strings, any order)."""
    canonical = json.dumps(sorted(claims), ensure_ascii=True, separators=(",", ":"))
    return "v2:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _read() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return projects if isinstance(projects, dict) else {}


def remembered(cwd: PathLike, claims: Iterable[str]) -> Remembered | None:
    """The answer remembered for ``cwd``: "ignore" always holds, "trust" only for the same claims."""
    entry = _read().get(project_key(cwd))
    if not isinstance(entry, dict):
        return None
    answer = entry.get("answer")
    if answer == "ignore":
        return "ignore"
    if answer == "trust" and entry.get("claims") == fingerprint(claims):
        return "trust"
    return None


def remember(cwd: PathLike, answer: Remembered, claims: Iterable[str]) -> None:
    """Keep ``answer`` for ``cwd`` (0600 file); an error is raised as ``OSError`` for the caller to report."""
    projects = _read()
    projects[project_key(cwd)] = {"answer": answer, "claims": fingerprint(claims)}
    path = store_path()
    ensure_private_dir(path.parent)
    text = json.dumps({"version": 2, "projects": projects}, indent=2, ensure_ascii=True) + "\n"
    fd, temporary = tempfile.mkstemp(prefix=".trust-", dir=path.parent)  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


__all__ = ["STORE_NAME", "Remembered", "fingerprint", "project_key", "remember", "remembered", "store_path"]
