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
- Writers take turns (``flock`` on ``pi-compact-trust.json.lock`` beside it, up to ``LOCK_WAIT_S``) and each
  re-reads the file under the lock and adds its answer to what it finds, so answers given at the same time in
  several terminals are all kept. A file that does not parse is never overwritten: it is renamed to
  ``pi-compact-trust.json.unreadable-<time>`` first (its answers can be copied back from there), and the
  caller is told in one sentence.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pi_compact.durable import sync_directory
from pi_compact.paths import PathLike, agent_dir, ensure_private_dir

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: writers do not take turns there
    fcntl = None  # type: ignore[assignment]

Remembered = Literal["trust", "ignore"]
STORE_NAME = "pi-compact-trust.json"
LOCK_WAIT_S = 5.0  # another writer holds the lock only while it rewrites a small file
_POLL_S = 0.02


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


class _Unreadable(ValueError):
    """The file exists but is not a trust file (cut short, edited by hand, another program's)."""


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _Unreadable(f"it is not valid JSON ({exc})") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        raise _Unreadable('it has no "projects" object')
    return projects


def _read() -> dict[str, Any]:
    try:
        return _parse(store_path().read_bytes())
    except (OSError, ValueError):
        return {}


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


def remember(cwd: PathLike, answer: Remembered, claims: Iterable[str]) -> str | None:
    """Keep ``answer`` for ``cwd`` beside every answer already kept (0600 file). Returns a sentence to show
    when an unreadable file was set aside to do so, else None; a failure is raised as ``OSError``."""
    path = store_path()
    ensure_private_dir(path.parent)
    with _turn(path):
        try:
            raw: bytes | None = path.read_bytes()
        except FileNotFoundError:
            raw = None
        note = None
        try:
            projects = _parse(raw) if raw is not None and raw.strip() else {}
        except _Unreadable as exc:
            kept = path.with_name(f"{STORE_NAME}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
            os.replace(path, kept)
            projects = {}
            note = (f"{path} could not be read ({exc}), so it was kept as {kept} and a new one started: "
                    "directories answered in it will be asked again.")
        projects[project_key(cwd)] = {"answer": answer, "claims": fingerprint(claims)}
        _write(path, json.dumps({"version": 2, "projects": projects}, indent=2, ensure_ascii=True) + "\n")
    return note


@contextmanager
def _turn(path: Path) -> Iterator[None]:
    """Hold the writers' lock (a sidecar file, kept) while the caller reads, merges and writes."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(path.with_name(STORE_NAME + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another pi-compact held {path} for more than {LOCK_WAIT_S:g} s") from None
                time.sleep(_POLL_S)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (a temporary file renamed over it), 0600, synced."""
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
