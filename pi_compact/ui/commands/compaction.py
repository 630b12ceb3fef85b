"""``/compact``, ``/summary`` and ``/autocompact``: compacting now, reading the summary, the automatic switch."""

from __future__ import annotations

from rich.text import Text

from pi_compact.compaction.quality import format_diff, summary_diff
from pi_compact.errors import PiCompactError
from pi_compact.ui.compaction_view import summary_renderable
from pi_compact.ui.state import Outcome, ReplState


def compact(state: ReplState, arg: str) -> Outcome:
    messages = sum(1 for e in state.session.store.entries if e.get("type") == "message")
    if messages < 2:
        state.say("Nothing to compact (no messages yet).", "yellow")
        return "continue"
    try:
        state.run(lambda token: state.session.compact(arg or None, token))
    except PiCompactError as exc:
        state.say(str(exc), "red")
    state.print_status()
    return "continue"


def summary(state: ReplState, arg: str) -> Outcome:
    compactions = [e for e in state.session.store.branch() if e.get("type") == "compaction"]
    entry = compactions[-1] if compactions else None
    if arg.strip() == "--diff":
        if len(compactions) < 2:
            state.say(f"/summary --diff compares the latest two compactions on this branch; it has {len(compactions)}.",
                      "yellow")
        else:
            diff = summary_diff(str(compactions[-2].get("summary", "")), str(entry.get("summary", "") if entry else ""))
            state.console.print(Text(format_diff(diff)))
    elif entry is None:
        state.say("No compaction yet: /compact makes one.", "yellow")
    else:
        state.console.print(summary_renderable(str(entry.get("summary", "")), int(entry.get("tokensBefore") or 0)))
    return "continue"


def autocompact(state: ReplState, arg: str) -> Outcome:
    if arg not in ("on", "off"):
        current = "on" if state.session.auto_compact and state.session.settings.compaction.enabled else "off"
        state.say(f"Auto-compaction is {current}. Usage: /autocompact on|off.")
        return "continue"
    state.session.set_auto_compaction(arg == "on")
    state.say(f"Auto-compaction {arg}.", "green")
    return "continue"
