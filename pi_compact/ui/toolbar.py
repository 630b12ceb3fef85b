"""The bottom toolbar while the agent works: how full the context is, how long the work has run, and
what is being typed ahead (typed text shown as text, never read as markup).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from pi_compact.ui.renderer_text import clean
from pi_compact.ui.status import UNKNOWN, StatusInfo, format_percent, gather_status, percent_style

if TYPE_CHECKING:
    from pi_compact.ui.input import TurnKeys
    from pi_compact.ui.state import ReplState

SEP = " · "
METER_EVERY_S = 1.0


def _meter(line: Text, info: StatusInfo) -> None:
    approx = "" if info.from_usage else "~"
    if info.window is None or info.percent is None:
        line.append(f"ctx {approx}{info.tokens:,}/{UNKNOWN}", style="dim")
    else:
        line.append(f"ctx {approx}{info.tokens:,}/{info.window:,} ", style="dim")
        line.append(f"({format_percent(info.percent)})", style=percent_style(info.percent))
    line.append(SEP, style="dim")
    if not info.auto_compact:
        line.append("auto-compaction off", style="yellow")
    elif info.threshold is None or not info.window:
        line.append(f"compaction at {UNKNOWN}", style="dim")
    else:
        line.append(f"compaction at {format_percent(info.threshold / info.window * 100)}", style="dim")
    line.append(SEP, style="dim")


def _one_line(text: str) -> str:
    return " ⏎ ".join(clean(text).splitlines())


# Pure: the first line reads ``ctx 41,200/128,000 (32%) · compaction at 92% · 12 s``; a second line appears only
# when something was typed ahead: ``queued: fix the test · typing: and the par▏``, control characters dropped.
def toolbar_text(info: StatusInfo | None, elapsed_s: float, queued: Sequence[str], typing: str) -> Text:
    """The toolbar's lines (``info`` None: the meter could not be read yet)."""
    line = Text(no_wrap=True, overflow="ellipsis")
    if info is not None:
        _meter(line, info)
    line.append(f"{int(elapsed_s)} s", style="dim")
    if not queued and not typing:
        return line
    ahead = Text(no_wrap=True, overflow="ellipsis")
    if queued:
        ahead.append("queued: ", style="cyan")
        ahead.append(" | ".join(_one_line(text) for text in queued))
    if typing:
        if queued:
            ahead.append(SEP, style="dim")
        ahead.append("typing: ", style="cyan")
        ahead.append(_one_line(typing) + "▏")
    return Text("\n").join([line, ahead])


# What the renderer's live region draws below the current view while a turn, a ``/compact`` or a ``/model``
# switch runs (refreshed ~10 times a second, so the seconds and the type-ahead stay current). The meter is re-
# read at most once a second, because estimating a long session costs; a read that fails (the worker is changing
# the session) keeps the previous numbers.
class Toolbar:
    """The live toolbar of one piece of work; ``watch(keys)`` hands it the keys typed meanwhile."""

    def __init__(
        self, meter: Callable[[], StatusInfo], waiting: Callable[[], Sequence[str]], typed: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._meter = meter
        self._waiting = waiting  # lines queued before this work started, still to run after it
        self._typed = typed  # shown until the keys are watched
        self._clock = clock
        self._started = clock()
        self._keys: TurnKeys | None = None
        self._info: StatusInfo | None = None
        self._read_at: float | None = None

    def watch(self, keys: TurnKeys) -> None:
        self._keys = keys

    def info(self) -> StatusInfo | None:
        now = self._clock()
        if self._read_at is None or now - self._read_at >= METER_EVERY_S:
            self._read_at = now
            try:
                self._info = self._meter()
            except Exception:  # noqa: BLE001 - the worker may be changing the session; keep the last numbers
                pass
        return self._info

    def __call__(self) -> Text:
        keys = self._keys
        queued = [*self._waiting(), *(keys.lines if keys is not None else ())]
        typing = keys.typed if keys is not None else self._typed
        return toolbar_text(self.info(), self._clock() - self._started, queued, typing)


def show_toolbar(state: ReplState, waiting: Callable[[], Sequence[str]], typed: str) -> Toolbar:
    """Put a new toolbar at the bottom of ``state``'s renderer (``renderer.set_footer(None)`` removes it)."""
    toolbar = Toolbar(lambda: gather_status(state.session, state.model_name), waiting, typed)
    state.renderer.set_footer(toolbar)
    return toolbar


__all__ = ["Toolbar", "show_toolbar", "toolbar_text"]
