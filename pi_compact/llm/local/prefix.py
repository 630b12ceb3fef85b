"""The embedded model's prompt prefixes, kept on disk from one run to the next.

``prefix_key`` names what a request's prompt starts with; ``PrefixCache`` restores that prefix into
the server's slot before a request and saves it after a good reply. The files hold a conversation's
model state, so the folder is 0700 and each file 0600. A cache: every failure is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_compact import clock
from pi_compact.llm.protocol import ChatRequest

SAVE_LIMIT = 4096
KEEP = 3
SUFFIX = ".slot"

# (action, file name) -> the server's answer; raises on any failure.
SlotAction = Callable[[str, str], Any]


def prefix_key(identity: str, request: ChatRequest) -> str:
    """The name of the file holding ``request``'s prefix under ``identity``: what the chat template
    renders first, the tool list when there is one (``template``), else the system prompt.

    A saved prefix then serves every request with those tools, whatever its system prompt (the
    working directory and date in it): the server reuses the longest common start of the restored
    tokens and the new prompt, and reads only the rest.
    """
    tools = [[tool.name, tool.description, tool.parameters] for tool in request.tools]
    head: Any = tools if tools else request.system
    text = json.dumps([identity, head], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# Why keep them: on a 2-core machine the local model reads ~60 tokens/s, so every run's first request spent ~30 s
# reading the agent's system prompt and tool list again, and so did the first turn after each
# compaction (the summary request had taken the one slot meanwhile). llama.cpp saves a slot's KV cache
# to a file and restores it in milliseconds; a later request sharing the restored prefix reads only
# what differs (measured here: 2,316 prompt tokens 41 s from scratch, 0.6 s after a restore).
class PrefixCache:
    """Which prefix the server's one slot holds, and the saved prefixes in ``directory``.

    ``before(key)`` restores the saved slot for ``key`` when the slot last served another prefix (or
    nothing yet) and a file exists. ``after(key, tokens)`` saves the slot after a good reply when there
    is no file for ``key`` yet and the slot holds at most ``SAVE_LIMIT`` tokens (a file is ~28 KB a
    token for the bundled model). Files are written under a temporary name and renamed, so another
    pi-compact never restores half a file; only the ``KEEP`` most recently used stay. Every failure
    (no directory, a busy or older server, a full disk) is ignored: no request fails or waits long.
    """

    def __init__(self, directory: Path, act: SlotAction) -> None:
        self.directory = directory
        self._act = act
        self._lock = threading.Lock()
        self._holding: str | None = None  # the key of the last request sent
        _private(directory, 0o700)
        for saved in _listing(directory, f"*{SUFFIX}"):
            _private(saved, 0o600)

    def _file(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def before(self, key: str) -> bool:
        """Restore ``key``'s saved prefix unless the slot holds it already; True when restored."""
        with self._lock:
            if key == self._holding:
                return False  # the slot's own cache is at least as long
            self._holding = key
            path = self._file(key)
            if not path.is_file():
                return False
            try:
                self._act("restore", path.name)
                os.utime(path)  # most recently used
            except Exception:  # noqa: BLE001 - a cache miss, whatever went wrong
                return False
            return True

    def after(self, key: str, tokens: int) -> bool:
        """Save the slot as ``key``'s prefix when worth it (see the contract); True when saved."""
        with self._lock:
            path = self._file(key)
            if key != self._holding or tokens > SAVE_LIMIT or tokens <= 0 or path.exists():
                return False
            temporary = f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            try:
                self._act("save", temporary)
                os.chmod(self.directory / temporary, 0o600)  # before its final name makes it findable
                os.replace(self.directory / temporary, path)
            except Exception:  # noqa: BLE001 - not saved this time
                (self.directory / temporary).unlink(missing_ok=True)
                return False
            self._prune()
            return True

    def _prune(self) -> None:
        """Keep the ``KEEP`` most recently used files, and no temporary file older than a day (a save
        cut short by a crash)."""
        try:
            saved = sorted(self.directory.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
            for stale in saved[KEEP:]:
                stale.unlink(missing_ok=True)
            for temporary in self.directory.glob("*.tmp"):
                if clock.now_ms() / 1000 - temporary.stat().st_mtime > 86_400:
                    temporary.unlink(missing_ok=True)
        except OSError:
            pass  # another pi-compact pruned first


def _private(path: Path, mode: int) -> None:
    try:
        os.chmod(path, mode)
    except OSError:
        pass  # not ours to change (another user's cache?): the cache still works


def _listing(directory: Path, pattern: str) -> list[Path]:
    try:
        return list(directory.glob(pattern))
    except OSError:
        return []


__all__ = ["KEEP", "SAVE_LIMIT", "PrefixCache", "prefix_key"]
