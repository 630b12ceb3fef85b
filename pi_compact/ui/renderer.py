"""TerminalRenderer: what the agent's events look like in the terminal (rich).

Each reply lands in the scrollback once, fully rendered; text from the user, the model, tools and
session files is never parsed as rich markup (only ``Text``/``Markdown``, control sequences stripped).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from pi_compact.agent.events import (
    AgentEnd,
    AgentStart,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Notice,
    Retry,
    SessionEvent,
    ToolExecutionEnd,
    ToolExecutionStart,
    TreeEnd,
    TreeStart,
)
from pi_compact.agent.loop import is_loop_stop
from pi_compact.ui.compaction_view import end_renderable, retry_label, spinner_text
from pi_compact.ui.renderer_text import KEY_ARGUMENTS, clean, key_argument, result_text
from pi_compact.ui.tool_view import ToolView, call_line, hanging, read_before_write, result_view
from pi_compact.ui.tree_view import tree_end_renderable

CANCEL_KEYS = "Esc or Ctrl-C to cancel"
RESULT_LINES = 4  # a tool result is collapsed to this many lines
_NOTICE_STYLES = {"info": "cyan", "warning": "yellow", "error": "red"}


def tool_line(name: str, args: Mapping[str, Any]) -> Text:
    """One line per tool call: ``▸ tool key-argument``."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append("▸ ", style="cyan")
    line.append(clean(name), style="bold")
    argument = key_argument(args)
    if argument:
        line.append(" " + argument)
    return line


def result_lines(result: Mapping[str, Any], is_error: bool, limit: int = RESULT_LINES) -> Text:
    """A tool result collapsed to ``limit`` lines, plus how many were hidden; red when it is an error."""
    lines = result_text(result).rstrip().splitlines() or ["(no output)"]
    out = Text(no_wrap=True, overflow="ellipsis")
    for index, line in enumerate(lines[:limit]):
        out.append("  ⎿ " if index == 0 else "    ", style="dim")
        out.append(line.expandtabs(4), style="red" if is_error else "dim")
        if index < min(limit, len(lines)) - 1:
            out.append("\n")
    if len(lines) > limit:
        hidden = len(lines) - limit
        out.append(f"\n    … {hidden} more line" + ("" if hidden == 1 else "s"), style="dim italic")
    return out


class _Ticker:
    """A spinner whose label is recomputed at every refresh (it shows elapsed seconds)."""

    def __init__(self, label: Callable[[], str]) -> None:
        self._label = label
        self._spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self._spinner.update(text=Text(self._label(), style="dim"))
        yield self._spinner


class _Tail:
    """The last screenful of a renderable, so a long streaming reply never scrolls the live region."""

    def __init__(self, content: Callable[[], RenderableType]) -> None:
        self._content = content

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self._content(), options, pad=False)
        room = max(3, console.size.height - 6)  # room for the prompt line and a two-line footer
        for line in lines[-room:]:
            yield from line
            yield Segment.line()


# At most one live region at a time: a transient rich ``Live`` that shows, in turn, the working spinner, the
# reply streaming in as markdown, a running tool, or the compaction spinner. Anything permanent is printed with
# ``console.print`` (above the live region while it runs), so each reply lands in the scrollback exactly once,
# when its ``MessageEnd`` arrives. Events may arrive on a worker thread (the REPL runs turns there); ``close()``
# ends any live region once the turn is over. While a ``footer`` is set (``set_footer``: the toolbar of a
# running turn) the live region stays up under everything printed, showing the footer below the current view.
class TerminalRenderer:
    """Consumes ``SessionEvent`` values (it is the session's ``emit``) and draws them on ``console``."""

    def __init__(
        self, console: Console, *, show_thinking: bool = True, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.show_thinking = show_thinking
        self._clock = clock
        self._live: Live | None = None
        self._view: RenderableType | None = None
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._view_since = 0.0
        self._compaction: CompactionStart | None = None
        self._compaction_since = 0.0
        self._compaction_retry: str | None = None  # retry_label of the summarizer's pending retry
        self._calls: dict[str, tuple[dict[str, Any], str | None]] = {}  # running calls: args, text before a write
        self.last_collapsed: tuple[Text, ToolView] | None = None  # the last tool output shown cut short
        self._footer: Callable[[], RenderableType] | None = None
        # What the model says it is doing while no reply streams yet (the embedded model reading a long
        # prompt: "Reading the prompt: 3,200 / 11,000 tokens…"); the spinners show it instead of "Working…".
        self.model_progress: Callable[[], str | None] = lambda: None

    def expand_last(self) -> bool:
        """Print the last collapsed tool output in full; False when there is none."""
        if self.last_collapsed is None:
            return False
        line, view = self.last_collapsed
        self.print(line)
        self.print(hanging(view.full if view.full is not None else view.shown))
        return True

    # ---- the live region -------------------------------------------------------------------------

    def current_view(self) -> RenderableType | None:
        """What the live region shows now (None when there is none)."""
        return self._view

    def _show(self, view: RenderableType | None) -> None:
        self._view = view
        if self._live is None:
            self._live = Live(get_renderable=self._render_view, console=self.console, transient=True,
                              refresh_per_second=10, redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
        else:
            self._live.refresh()

    def _render_view(self) -> RenderableType:
        view, footer = self._view, self._footer
        if footer is None:
            return view if view is not None else Text("")
        return footer() if view is None else Group(view, footer())

    def set_footer(self, footer: Callable[[], RenderableType] | None) -> None:
        """Keep ``footer()`` at the bottom of the live region (re-rendered at each refresh); None ends it."""
        self._footer = footer
        if footer is None:
            self.close()
        else:
            self._show(self._view)

    def close(self) -> None:
        """End the current view; the live region too unless a footer holds it (it is transient: it leaves nothing)."""
        self._view = None
        if self._live is not None and self._footer is not None:
            self._live.refresh()
        elif self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def working(self, label: str | Callable[[], str]) -> None:
        """A spinner with ``label`` (a function: read at each refresh, e.g. a start's progress) and the
        seconds since it appeared (e.g. while the model loads)."""
        self._view_since = self._clock()
        text = label if callable(label) else lambda: label
        self._show(_Ticker(lambda: f"{text()}{self._seconds(self._view_since)} ({CANCEL_KEYS})"))

    def _seconds(self, since: float) -> str:
        """The seconds a spinner shows since ``since``; none while the toolbar (``set_footer``) shows the
        piece of work's clock: two clocks started at different moments read as one clock disagreeing."""
        return "" if self._footer is not None else f" {self._clock() - since:.0f}s"

    def print(self, renderable: RenderableType) -> None:
        if isinstance(renderable, Text) and renderable.no_wrap:  # one line (a tool call): rich would wrap it
            self.console.print(renderable, no_wrap=True, overflow=renderable.overflow or "ellipsis")
        else:
            self.console.print(renderable)

    # ---- events ----------------------------------------------------------------------------------

    def __call__(self, event: SessionEvent) -> None:
        if isinstance(event, (AgentStart, MessageStart)):
            if not isinstance(event, MessageStart) or event.role == "assistant":
                self._text, self._thinking = [], []
                self.working(lambda: self.model_progress() or "Working…")
        elif isinstance(event, MessageUpdate):
            self._on_update(event)
        elif isinstance(event, MessageEnd):
            self._on_message_end(event.message)
        elif isinstance(event, ToolExecutionStart):
            self.close()
            self.print(call_line(event.tool_name, event.args))
            before = read_before_write(event.args, Path.cwd()) if event.tool_name == "write" else None
            self._calls[event.tool_call_id] = (dict(event.args), before)
            self.working(f"Running {clean(event.tool_name)}…")
        elif isinstance(event, ToolExecutionEnd) and is_loop_stop(event.result):
            self._calls.pop(event.tool_call_id, None)  # the stop's notice is its one line, with the count and call
        elif isinstance(event, ToolExecutionEnd):
            self.close()
            args, before = self._calls.pop(event.tool_call_id, ({}, None))
            view = result_view(event.tool_name, args, event.result, event.is_error, before=before)
            self.print(hanging(view.shown))
            if view.full is not None:
                self.last_collapsed = (call_line(event.tool_name, args), view)
        elif isinstance(event, CompactionStart):
            self._on_compaction_start(event)
        elif isinstance(event, CompactionEnd):
            self._on_compaction_end(event)
        elif isinstance(event, Retry):
            self._on_retry(event)
        elif isinstance(event, Notice):
            self.print(Text(clean(event.text), style=_NOTICE_STYLES.get(event.level, "cyan")))
        elif isinstance(event, AgentEnd):
            self.close()
        elif isinstance(event, TreeStart) and event.summarize:
            self.working("Summarizing the branch you leave…")
        elif isinstance(event, TreeEnd):
            self.close()
            self.print(tree_end_renderable(event))

    def _on_update(self, event: MessageUpdate) -> None:
        if event.kind == "text":
            self._text.append(event.delta)
        elif event.kind == "thinking":
            self._thinking.append(event.delta)
        else:
            return  # tool-call arguments stream in silently; the tool line says what was called
        if not isinstance(self._view, _Tail):
            self._show(_Tail(self._streaming))

    def _streaming(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._thinking and self.show_thinking:
            parts.append(Text(clean("".join(self._thinking)), style="dim italic"))
        if self._text:
            parts.append(Markdown(clean("".join(self._text))))
        elif not self.show_thinking:
            parts.append(Text("Thinking…", style="dim"))
        return Group(*parts)

    def _on_message_end(self, message: Mapping[str, Any]) -> None:
        if message.get("role") != "assistant":
            return  # the user's text is already on screen (the prompt line); tool results come as events
        self.close()
        printed_text = False
        for block in message.get("content") or ():
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text" and str(block.get("text", "")).strip():
                self.print(Markdown(clean(str(block["text"]))))
                printed_text = True
            elif block.get("type") == "thinking" and self.show_thinking and str(block.get("thinking", "")).strip():
                self.print(Text(clean(str(block["thinking"])).strip(), style="dim italic"))
        stop = message.get("stopReason")
        if stop == "aborted" and not printed_text and "".join(self._text).strip():
            # The user saw this text stream in before cancelling; keep it on screen.
            self.print(Markdown(clean("".join(self._text))))
        if stop == "aborted":
            self.print(Text("Cancelled.", style="yellow"))
        elif stop == "error":
            self.print(Text(f"Error: {clean(str(message.get('errorMessage') or 'the model call failed'))}",
                            style="red"))
        elif stop == "length":
            self.print(Text("The reply was cut off at the output token limit.", style="yellow"))

    def _on_retry(self, event: Retry) -> None:
        label = retry_label(event.attempt, event.max_attempts, event.kind, event.status)
        if self._compaction is not None:
            self._compaction_retry = label  # the compaction spinner says it; its end block gives the outcome
            return
        self.print(Text(f"Provider error: {clean(event.error_message)} — retry {event.attempt}/"
                        f"{event.max_attempts} in {event.delay_ms / 1000:.1f}s", style="yellow"))
        self.working(label[0].upper() + label[1:])

    def _on_compaction_start(self, event: CompactionStart) -> None:
        self.close()
        self._compaction = event
        self._compaction_since = self._clock()
        self._compaction_retry = None
        self._show(_Ticker(lambda: spinner_text(
            event.reason, event.context_percent,
            None if self._footer is not None else self._clock() - self._compaction_since,
            self._compaction_retry or self.model_progress())))

    def _on_compaction_end(self, event: CompactionEnd) -> None:
        self.close()
        started = self._compaction_since if self._compaction is not None else self._clock()
        self._compaction = None
        self._compaction_retry = None
        self.print(end_renderable(event, self._clock() - started))
        if event.result is not None and event.will_retry:
            self.print(Text("Retrying the request with the compacted context…", style="dim"))


__all__ = ["KEY_ARGUMENTS", "TerminalRenderer", "clean", "key_argument", "result_lines", "result_text", "tool_line"]
