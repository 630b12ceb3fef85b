"""``/compact``, ``/summary`` and ``/autocompact``: compacting now, reading the summary, the automatic switch."""

from __future__ import annotations

from rich.text import Text

from pi_compact.agent.compaction.reasons import SKIP_TEXT
from pi_compact.compaction.quality import format_diff, summary_diff
from pi_compact.errors import PiCompactError
from pi_compact.ui.compaction_view import summary_renderable
from pi_compact.ui.renderer_text import clean
from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.status import GUARD_STOPPED, auto_compaction_on


def compact(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    # Read the tail only (a resumed session's older entries stay unread): with a compaction in the file
    # there were messages, and the compactor says why when there is nothing more to compact.
    messages = sum(1 for e in store.branch_tail() if e.get("type") == "message")
    if messages < 2 and store.compaction_count() == 0:
        state.say(SKIP_TEXT["no_messages"], "yellow")
        return "continue"
    keep, instructions = keep_option(arg)
    if keep == 0:
        state.say("Usage: /compact [--keep TOKENS] [instructions], with TOKENS a whole number > 0.", "yellow")
        return "continue"
    try:
        state.run(lambda token: state.session.compact(instructions or None, token, keep=keep))
    except PiCompactError as exc:
        state.say(str(exc), "red")
    state.print_status()
    return "continue"


def keep_option(arg: str) -> tuple[int | None, str]:
    """``--keep N`` at the start of ``/compact``'s argument, and the instructions after it (0: a bad N)."""
    words = arg.split(maxsplit=2)
    if not words or words[0] != "--keep":
        return None, arg
    if len(words) < 2 or not words[1].isdigit() or int(words[1]) <= 0:
        return 0, ""
    return int(words[1]), words[2] if len(words) > 2 else ""


def summary(state: ReplState, arg: str) -> Outcome:
    if arg.strip() == "--diff":  # the only view that needs the compactions before the latest: read on demand
        compactions = [e for e in state.session.store.branch() if e.get("type") == "compaction"]
        if len(compactions) < 2:
            state.say(f"/summary --diff compares the latest two compactions on this branch; it has {len(compactions)}.",
                      "yellow")
        else:
            diff = summary_diff(str(compactions[-2].get("summary", "")), str(compactions[-1].get("summary", "")))
            state.console.print(Text(clean(format_diff(diff))))
        return "continue"
    # The branch's last compaction is in its tail (which starts at it or at its kept entry).
    entry = next((e for e in reversed(state.session.store.branch_tail()) if e.get("type") == "compaction"), None)
    if entry is None:
        state.say("No compaction yet: /compact makes one.", "yellow")
    else:
        state.console.print(summary_renderable(str(entry.get("summary", "")), int(entry.get("tokensBefore") or 0)))
    return "continue"


def autocompact(state: ReplState, arg: str) -> Outcome:
    if arg not in ("on", "off"):
        current = "on" if auto_compaction_on(state.session) else "off"
        why = f" ({GUARD_STOPPED})" if state.session.compaction_stopped else ""
        state.say(f"Auto-compaction is {current}{why}. Usage: /autocompact on|off.")
        return "continue"
    state.session.set_auto_compaction(arg == "on")
    state.say(f"Auto-compaction {arg}.", "green")
    return "continue"
