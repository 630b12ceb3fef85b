"""The recent conversation, shown when an existing session is opened (``-c``, ``--session``).

Contract: ``recent_transcript(messages, turns)`` renders the last ``turns`` user turns of the branch
(``branch_messages`` reads them back from the file, past a compaction, which shows as one line where
it happened) as they looked when they happened (your message on a ``pi>`` line, the answer as markdown, one
line per tool call with its collapsed result, identical calls in a row as one line with their count, the
calls the loop guard did not run as one line, ``!`` commands); everything earlier is one dim line
saying how many messages it holds. The compaction summary itself is not shown here: the banner's
"compacted N times — /summary to read" line stands for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.markdown import Markdown
from rich.text import Text

from pi_compact.agent.loop import is_loop_stop
from pi_compact.messages import text_of
from pi_compact.ui.renderer_text import clean
from pi_compact.ui.tool_view import call_line, hanging, result_view

if TYPE_CHECKING:
    from pi_compact.session.store import SessionStore
    from pi_compact.ui.state import ReplState

TURNS = 3
USER_LINES = 6  # a long pasted message is cut to its first lines


def _user(text: str) -> Text:
    lines = clean(text).strip().splitlines() or [""]
    out = Text("pi> ", style="bold cyan")
    out.append("\n    ".join(lines[:USER_LINES]))
    if len(lines) > USER_LINES:
        out.append(f"\n    … {len(lines) - USER_LINES} more lines", style="dim italic")
    return out


def _assistant(message: Mapping[str, Any], calls: dict[str, tuple[str, Mapping[str, Any]]]) -> list[RenderableType]:
    parts: list[RenderableType] = []
    last: tuple[str, Mapping[str, Any]] | None = None  # the previous block's call: identical ones are one line
    repeats = 0
    for block in message.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and str(block.get("text", "")).strip():
            parts.append(Markdown(clean(str(block["text"]))))
            last = None
        elif block.get("type") == "toolCall":
            raw = block.get("arguments")
            args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            call = (str(block.get("name", "")), args)
            calls[str(block.get("id", ""))] = call
            repeats = repeats + 1 if call == last else 1
            line = call_line(*call)
            if repeats > 1:
                line.append(f" ×{repeats}", style="dim")
                parts[-1] = line
            else:
                parts.append(line)
            last = call
    if message.get("stopReason") == "aborted":
        parts.append(Text("Cancelled.", style="yellow"))
    return parts


def render_message(message: Mapping[str, Any], calls: dict[str, tuple[str, Mapping[str, Any]]]) -> list[RenderableType]:
    """How one context message looked when it happened (``calls`` pairs tool results with their calls)."""
    role = message.get("role")
    if role == "user":
        return [_user(text_of(message.get("content")))]
    if role == "assistant":
        return _assistant(message, calls)
    if role == "toolResult":
        name, args = calls.get(str(message.get("toolCallId", "")), (str(message.get("toolName", "")), {}))
        return [hanging(result_view(name, args, message, bool(message.get("isError"))).shown)]
    if role == "bashExecution":
        line = Text("$ ", style="bold cyan")
        line.append(clean(str(message.get("command", ""))), style="bold")
        output = {"content": [{"type": "text", "text": str(message.get("output") or "")}]}
        return [line, hanging(result_view("bash", {}, output, message.get("exitCode") not in (None, 0)).shown)]
    if role == COMPACTED:
        return [Text(f"⟳ compacted here (~{int(message.get('tokensBefore') or 0):,} tokens summarized)",
                     style="dim")]
    return []  # summaries and custom messages: the banner's lines stand for them


def recent_transcript(messages: Sequence[Mapping[str, Any]], turns: int = TURNS, *,
                      older: bool = False) -> list[RenderableType]:
    """The last ``turns`` user turns as renderables, after one line for everything earlier (``older``:
    ``messages`` are only the newest part of a longer branch, whose earlier size is not counted)."""
    starts = [i for i, m in enumerate(messages) if m.get("role") in ("user", "bashExecution")]
    first = starts[-turns] if len(starts) >= turns else (starts[0] if starts else len(messages))
    earlier = [m for m in messages[:first] if m.get("role") in ("user", "assistant", "toolResult", "bashExecution")]
    out: list[RenderableType] = []
    if older:
        out.append(Text("… earlier messages not shown (/context for the totals)", style="dim italic"))
    elif earlier:
        out.append(Text(f"… {len(earlier)} earlier message{'' if len(earlier) == 1 else 's'} not shown "
                        "(/context for the totals)", style="dim italic"))
    calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
    stopped = 0  # the calls of a reply the loop guard did not run: one line for all of them
    for message in [*messages[first:], {}]:
        if message.get("role") == "toolResult" and is_loop_stop(message):
            stopped += 1
            continue
        if stopped:
            out.append(Text(f"  ⎿ Not run: stopped by the loop guard ({stopped} call{'' if stopped == 1 else 's'})",
                            style="yellow"))
            stopped = 0
        out.extend(render_message(message, calls))
    return out


COMPACTED = "compacted"  # a compaction entry as the transcript shows it: one line where it happened
FIRST_READ = 64  # entries read back from the leaf at first (four times more while the turns are not all there)


def branch_messages(store: SessionStore, turns: int = TURNS) -> tuple[list[Mapping[str, Any]], bool]:
    """The messages of the branch's last ``turns`` user turns (a compaction among them as one ``COMPACTED``
    line), read back from the file past any compaction, root first; and whether older ones were left unread.
    A compaction summarizes the context, not the conversation: the turns before it are still the user's."""
    count = FIRST_READ
    while True:
        entries, older = store.path_back(count)
        messages: list[Mapping[str, Any]] = []
        for entry in entries:
            if entry.get("type") == "compaction":
                messages.append({"role": COMPACTED, "tokensBefore": entry.get("tokensBefore")})
            elif entry.get("type") == "message" and isinstance(entry.get("message"), Mapping):
                messages.append(entry["message"])
        if not older or sum(1 for m in messages if m.get("role") in ("user", "bashExecution")) >= turns:
            return messages, older
        count *= 4


def show_recent(state: ReplState) -> None:
    """Print the branch's last turns, as opening a session does."""
    messages, older = branch_messages(state.session.store)
    for part in recent_transcript(messages, older=older):
        state.console.print(part)


__all__ = ["COMPACTED", "TURNS", "branch_messages", "recent_transcript", "render_message", "show_recent"]


def show_opening(state: ReplState) -> None:
    """What opening a session says: the file's warnings, resumed or new, its compactions, the last turns."""
    from pi_compact.ui.status import compaction_banner

    say, session = state.say, state.session
    for warning in session.store.warnings:
        say(f"warning: {warning}", "yellow")
    path = session.store.path
    if session.messages:
        say(f"Resumed {path}: {len(session.messages)} messages in context.", "cyan", path=True)
    else:
        say(f"Session {path.name if path is not None else 'in memory only (--no-session)'}", "dim")
    banner = compaction_banner(session)
    if banner is not None:
        say(banner, "cyan")
    if session.messages:
        show_recent(state)
