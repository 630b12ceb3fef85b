"""How the session tree, its moves, ``/uncompact`` and pins look in the terminal.

Everything is built from plain strings as rich ``Text``/``Table``/``Panel``, so text from a session file
is never read as markup. Shared by the REPL and ``pi-compact uncompact``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pi_compact.agent.events import TreeEnd, TreeOutcome, UncompactOutcome
from pi_compact.session.pins import Pin, fold_pins, pinned_block
from pi_compact.session.tree import TreeNode, undone_compaction
from pi_compact.ui.compaction_view import spent_text
from pi_compact.ui.renderer_text import clean
from pi_compact.usage import usage_tokens

ROW_CHARS = 90  # a row's text is cut to this many characters
_MARKS = {"user": "", "compaction": "[compaction] ", "branch_summary": "[branch summary] ", "tip": "… "}
_STYLES = {"user": "", "compaction": "cyan", "branch_summary": "magenta", "tip": "dim"}


def _clip(text: str, limit: int = ROW_CHARS) -> str:
    flat = " ".join(clean(text).split())  # session text: no escape sequence reaches the terminal
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tree_table(nodes: Sequence[TreeNode]) -> RenderableType:
    """``/tree``: numbered rows, forks indented, the current branch bold, the current position marked."""
    if not nodes:
        return Text("The session has no entries yet.", style="yellow")
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column(no_wrap=True, overflow="ellipsis")
    for node in nodes:
        line = Text("  " * node.depth)
        style = _STYLES[node.kind] + (" bold" if node.on_branch else "")
        line.append(_MARKS[node.kind] + _clip(node.text), style=style.strip())
        if node.current:
            line.append("  ← you are here", style="bold green")
        table.add_row(Text(str(node.number)), line)
    hint = Text("/tree N moves there (a user message: the branch continues before it, so you can send it "
                "again or change it); /fork N starts a new session file from a user message.", style="dim")
    return Group(table, hint)


def tree_end_renderable(event: TreeEnd) -> RenderableType:
    """The line or block shown when a move ends: moved (with or without a summary), cancelled, failed."""
    if event.aborted:
        return Text("Move cancelled, nothing changed.", style="yellow")
    if event.outcome is None:
        return Text(clean(event.error_message or "The move was not made."), style="red")
    return moved_renderable(event.outcome)


def _entries(count: int) -> str:
    return f"{count:,} {'entry' if count == 1 else 'entries'}"


def moved_renderable(outcome: TreeOutcome) -> RenderableType:
    if outcome.summary is None:
        stay = "stays" if outcome.summarized == 1 else "stay"
        lines = [Text(f"Moved; {_entries(outcome.summarized)} of the branch left behind {stay} in the file "
                      "(not summarized).")]
    else:
        details = outcome.details or {}
        source = {"model": "the model", "fallback": "a model-free fallback", "extension": "an extension"}.get(
            outcome.source or "model", "the model")
        if source == "the model" and details.get("summaryModel"):
            source = f"the model {details['summaryModel']}"
        lines = [Text(f"Moved; the branch left behind ({_entries(outcome.summarized)}) was summarized by {source}.")]
        usage = details.get("usage")
        spent = spent_text(usage) if isinstance(usage, dict) and usage_tokens(usage) else ""
        lines.append(Text(f"Files: {len(details.get('readFiles') or [])} read, "
                          f"{len(details.get('modifiedFiles') or [])} modified{spent}", style="dim"))
    if outcome.resend_text:
        lines.append(Text("The message you moved to, to send again or change:", style="dim"))
        lines.append(Text(_clip(outcome.resend_text, 400)))
    return Panel(Group(*lines), title=Text("[tree]", style="bold magenta"), title_align="left",
                 border_style="magenta", expand=False)


def uncompact_block(outcome: UncompactOutcome, *, in_repl: bool = True, auto: bool = True) -> RenderableType:
    """The block ``/uncompact`` ends with: what was undone, how big the context is now, what follows."""
    size = f"~{outcome.tokens:,} tokens"
    if outcome.context_window:
        size += f" of the {outcome.context_window:,}-token window"
    lines = [
        Text.assemble(("Context ", "bold"), f"uncompacted: compaction {outcome.compaction_id} undone, {size}"),
        Text("Nothing was deleted: the compaction stays in the file on a side branch (/tree shows it)."
             if in_repl else "Nothing was deleted: the compaction stays in the file on a side branch."),
    ]
    if outcome.left_behind:
        lines.append(Text(f"{outcome.left_behind} message(s) written after it left the context (--force).",
                          style="yellow"))
    if outcome.dropped_pins:
        count = len(outcome.dropped_pins)
        named = "; ".join(f"“{clean(text[:40])}{'…' if len(text) > 40 else ''}”" for text in outcome.dropped_pins)
        lines.append(Text(f"{count} pin{'' if count == 1 else 's'} made after it no longer appl"
                          f"{'ies' if count == 1 else 'y'}: {named} (/pin again to keep it).", style="yellow"))
    if not auto:  # switched off, or stopped by the loop guard: nothing compacts it by itself
        lines.append(Text("Auto-compaction is off, so it stays uncompacted (/compact compacts it).", style="dim"))
    elif outcome.over_threshold:
        lines.append(Text("This is over the auto-compaction threshold: the next threshold check will compact "
                          "again (/autocompact off keeps it uncompacted).", style="yellow"))
    else:
        lines.append(Text("When it grows past the threshold, auto-compaction may compact it again.", style="dim"))
    return Panel(Group(*lines), title=Text("[uncompacted]", style="bold cyan"), title_align="left",
                 border_style="cyan", expand=False)


def pins_table(pins: Sequence[Pin], tokens: Callable[[str], int], budget: int) -> RenderableType:
    """``/pins``: each pin numbered with its size, then the total against the pin budget."""
    if not pins:
        return Text("No pins. /pin TEXT pins a note; /pin alone pins your last message.", style="dim")
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column(justify="right", style="dim", no_wrap=True)
    table.add_column()
    for number, pin in enumerate(pins, 1):
        table.add_row(Text(str(number)), Text(f"~{tokens(pin.text):,} tokens"), Text(_clip(pin.text, 200)))
    total = sum(tokens(pin.text) for pin in pins)
    style = "yellow" if total > budget else "dim"
    footer = Text(f"{len(pins)} pin{'' if len(pins) == 1 else 's'}, ~{total:,} tokens; budget {budget:,} "
                  "(compaction.pinBudget). /unpin N removes one.", style=style)
    return Group(table, footer)


def history_rows(
    path: Sequence[Mapping[str, Any]], tokens: Callable[[str], int], budget: int | None
) -> tuple[str, list[tuple[str, Text]]]:
    """For ``/context``: the pins' part of the breakdown (" · pins ~N (k)" or ""), and extra rows
    (the pins against their budget, and whether the context is uncompacted)."""
    pins = fold_pins(path)
    rows: list[tuple[str, Text]] = []
    part = ""
    if pins:
        total = tokens(pinned_block(pins))
        part = f" · pins ~{total:,} ({len(pins)})"
        over = budget is not None and total > budget
        limit = f"budget {budget:,} (compaction.pinBudget)" if budget is not None else "budget unknown yet"
        rows.append(("Pins", Text(f"{len(pins)} pinned, ~{total:,} tokens after the system prompt · {limit}",
                                  style="yellow" if over else "")))
    undone = undone_compaction(path)
    if undone is not None:
        rows.append(("Uncompacted", Text(f"compaction {undone} was undone (/uncompact); the next threshold check "
                                         "may compact again", style="cyan")))
    return part, rows


def fork_table(points: Sequence[tuple[str, str]]) -> RenderableType:
    """``/fork``: the user messages a new session can start from."""
    if not points:
        return Text("No user messages to fork from yet.", style="yellow")
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column(no_wrap=True, overflow="ellipsis")
    for number, (_entry_id, text) in enumerate(points, 1):
        table.add_row(Text(str(number)), Text(_clip(text)))
    return Group(table, Text("/fork N starts a new session with everything before message N.", style="dim"))


__all__ = [
    "fork_table", "history_rows", "moved_renderable", "pins_table", "tree_end_renderable", "tree_table",
    "uncompact_block",
]
