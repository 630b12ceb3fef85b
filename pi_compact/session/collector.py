"""Keeping Python's cyclic garbage collector away from a session's parsed entries.

Reading a session builds many containers that all survive, and none of them form cycles (JSON
objects never do). The collector would rescan them over and over while they are built, then again
at every later full collection of the process, and find no garbage: on a 100 MB session that was
seconds of a turn. So it is paused while reading (``gc_paused``) and what was read is moved out of
its sight afterwards (``freeze_loaded``). Entries are still freed as usual when nothing refers to
them any more: reference counting does not depend on the collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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


def freeze_loaded() -> None:
    """Exempt every object alive now (the entries just read) from later collections (``gc.freeze``).

    A cycle that is garbage already is exempted too and never collected; reading a session makes
    none, and the few left from start-up are not worth a full collection of everything read.
    """
    gc.freeze()
