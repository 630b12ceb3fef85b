"""``/thinking [level]`` and the cycle key (Shift+Tab, as in pi): the session's thinking level.

Without an argument it shows the level and the levels the model can do; with one it asks the session
for it (clamped to the model, with one notice; one ``thinking_level_change`` entry when it changed).
"""

from __future__ import annotations

from pi_compact.errors import PiCompactError
from pi_compact.llm.thinking import LEVELS, supported_levels
from pi_compact.ui.state import Outcome, ReplState


def thinking(state: ReplState, arg: str) -> Outcome:
    session = state.session
    try:
        levels = supported_levels(session.model.info)
    except PiCompactError as exc:  # the model is unusable: nothing to clamp to
        state.say(str(exc), "red")
        return "continue"
    if not arg:
        state.say(f"Thinking level {session.thinking_level}; this model does {', '.join(levels)}.")
        state.say("Change it with /thinking LEVEL or Shift+Tab.", "dim")
        return "continue"
    if arg not in LEVELS:
        state.say(f"Unknown thinking level {arg!r}; one of {', '.join(LEVELS)}. Nothing was changed.", "yellow")
        return "continue"
    clamped = session.set_thinking_level(arg)
    state.say(f"Thinking level {clamped.level}.", "green")
    return "continue"


def cycle(state: ReplState) -> str:
    """The cycle key: the next level the model can do; returns the line to show."""
    try:
        if supported_levels(state.session.model.info) == ("off",):
            return "This model does not think: the thinking level stays off."
        return f"Thinking level {state.session.cycle_thinking_level()}."
    except PiCompactError as exc:
        return str(exc)


__all__ = ["cycle", "thinking"]
