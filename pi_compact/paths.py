"""Where pi_compact's files live: pi's agent directory, settings files, session files, prompt history.

Contract:
- Computing a path never creates a directory or file; callers create what they write, directories
  with ``ensure_private_dir`` (user-only: sessions and history hold tool output such as ``.env`` files).
- The layout matches pi (0.73.1) so both tools share ``~/.pi/agent`` and each other's sessions.
- This is the only module that imports ``platformdirs`` (lazily: only ``history_file`` and ``cache_dir``
  need it).
"""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeAlias

PathLike: TypeAlias = "str | os.PathLike[str]"

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
SESSION_DIR_ENV = "PI_CODING_AGENT_SESSION_DIR"
# pi's project-level config directory name (``piConfig.configDir`` in its package.json).
PROJECT_CONFIG_DIR = ".pi"
_HEADER_PEEK_BYTES = 512


def expand_tilde(value: str) -> Path:
    """pi's tilde rule: ``~`` and ``~/...`` refer to the home directory; anything else is used as-is."""
    if value == "~":
        return Path.home()
    if value.startswith("~/"):
        return Path.home() / value[2:]
    return Path(value)


def agent_dir() -> Path:
    """``$PI_CODING_AGENT_DIR`` (tilde-expanded) if set and non-empty, else ``~/.pi/agent``."""
    configured = os.environ.get(AGENT_DIR_ENV)
    if configured:
        return expand_tilde(configured)
    return Path.home() / PROJECT_CONFIG_DIR / "agent"


def global_settings_path() -> Path:
    """The user-wide settings file shared with pi."""
    return agent_dir() / "settings.json"


def settings_path_hint() -> str:
    """The global settings path for a message: the real one (``$PI_CODING_AGENT_DIR`` honoured), ``~``-short."""
    path = global_settings_path()
    try:
        return f"~/{path.relative_to(Path.home()).as_posix()}"
    except (ValueError, RuntimeError):  # outside home, or no home directory known
        return str(path)


def project_settings_path(cwd: PathLike) -> Path:
    """The per-project settings file, ``<cwd>/.pi/settings.json``."""
    return Path(cwd) / PROJECT_CONFIG_DIR / "settings.json"


def sessions_root() -> Path:
    """The directory holding one sub-directory of session files per working directory."""
    return agent_dir() / "sessions"


def session_dir_name(cwd: PathLike) -> str:
    """pi's directory name for a working directory: ``/Users/me/proj`` -> ``--Users-me-proj--``.

    One leading separator is dropped, then every ``/``, ``\\`` and ``:`` becomes ``-``. The path is used
    as given (not resolved), so a Windows path maps the same way on any platform.
    """
    text = os.fspath(cwd)
    if text[:1] in ("/", "\\"):
        text = text[1:]
    for char in "/\\:":
        text = text.replace(char, "-")
    return f"--{text}--"


def session_dir_for_cwd(cwd: PathLike) -> Path:
    """The default session directory for ``cwd`` under ``sessions_root()`` (not created here)."""
    return sessions_root() / session_dir_name(cwd)


def resolve_session_dir(cwd: PathLike, *, flag: str | None = None, setting: str | None = None) -> Path:
    """The directory new sessions go to, by pi's precedence.

    ``--session-dir`` flag, then ``$PI_CODING_AGENT_SESSION_DIR``, then the ``sessionDir`` setting, then
    the per-cwd default. An explicit directory holds session files directly (no per-cwd sub-directory).
    """
    for chosen in (flag, os.environ.get(SESSION_DIR_ENV), setting):
        if chosen:
            return expand_tilde(chosen)
    return session_dir_for_cwd(cwd)


def new_session_id(now: datetime | None = None) -> str:
    """A time-ordered UUID (version 7 layout): 48-bit Unix milliseconds, then random bits.

    Time order means session ids sort the same way as their creation times.
    """
    millis = int(now.timestamp() * 1000) if now is not None else time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version 7
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62  # RFC 4122 variant
    value |= secrets.randbits(62)
    return str(uuid.UUID(int=value))


def _iso_for_filename(now: datetime) -> str:
    """``2025-12-09T00:52:54.397Z`` with ``:`` and ``.`` replaced by ``-`` (naive datetimes count as UTC)."""
    moment = now.replace(tzinfo=timezone.utc) if now.tzinfo is None else now.astimezone(timezone.utc)
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond // 1000:03d}Z"
    return stamp.replace(":", "-").replace(".", "-")


def new_session_file(
    cwd: PathLike, now: datetime, *, session_id: str | None = None, directory: PathLike | None = None
) -> Path:
    """The path for a new session file: ``<timestamp>_<session id>.jsonl`` (nothing is created).

    The id in the name should be the id written in the file's header, so pass the same ``session_id``
    to the store; without one a fresh time-ordered id is made.
    """
    base = Path(directory) if directory is not None else session_dir_for_cwd(cwd)
    return base / f"{_iso_for_filename(now)}_{session_id or new_session_id(now)}.jsonl"


def ensure_private_dir(directory: Path) -> None:
    """Create ``directory`` and its missing parents readable by the user only (0700); existing ones
    are left as they are (``mkdir(parents=True)`` would give the parents the default mode)."""
    missing: list[Path] = []
    current = directory
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            if not path.is_dir():
                raise


CACHE_DIR_ENV = "PI_COMPACT_CACHE_DIR"


def cache_dir() -> Path:
    """The per-user cache directory for "pi-compact": ``$PI_COMPACT_CACHE_DIR`` if set, else platformdirs'."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    import platformdirs

    return platformdirs.user_cache_path("pi-compact")  # the learned-windows book and the local model


def history_file() -> Path:
    """The prompt-history file, in the platform's per-user state directory for "pi-compact"."""
    import platformdirs  # only needed here; keeps the import off the path of everything else

    return platformdirs.user_state_path("pi-compact", appauthor=False) / "history"


def _has_session_header(path: Path) -> bool:
    """pi's test: the first line within the first 512 bytes is JSON with type "session" and a string id."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEADER_PEEK_BYTES)
    except OSError:
        return False
    first_line = head.decode("utf-8", errors="replace").split("\n", 1)[0]
    try:
        header = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str)


def find_most_recent_session(directory: PathLike) -> Path | None:
    """The newest ``.jsonl`` file by modification time that starts with a session header, or None.

    A missing directory, other files and files without a header are skipped, never an error.
    """
    candidates: list[tuple[int, str]] = []
    try:
        with os.scandir(directory) as listing:
            for item in listing:
                if not item.name.endswith(".jsonl"):
                    continue
                try:
                    if item.is_file():
                        candidates.append((item.stat().st_mtime_ns, item.path))
                except OSError:
                    continue
    except OSError:
        return None
    # Newest first; equal mtimes fall back to the name, whose timestamp prefix orders by creation.
    for _mtime, candidate in sorted(candidates, reverse=True):
        if _has_session_header(Path(candidate)):
            return Path(candidate)
    return None
