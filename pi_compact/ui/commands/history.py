"""``/uncompact``, ``/pin``, ``/pins``, ``/unpin``: getting back what compaction summarized, and notes it keeps.

Each writes one entry through the session (the uncompact marker, a pin, an unpin); a refusal writes
nothing. ``pick_number`` is shared with the tree commands (``tree.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.errors import PiCompactError
from pi_compact.session.pins import budget_warning, fold_pins, pin_budget
from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.status import auto_compaction_on, model_ready
from pi_compact.ui.tree_view import pins_table, uncompact_block


def _tokens(state: ReplState) -> Callable[[str], int]:
    name = state.session.settings.compaction.token_estimator
    return lambda text: estimate_text_tokens(text, name)


def _window(state: ReplState) -> int | None:
    """The model's window, or None when the model cannot be used (or is not loaded yet)."""
    try:
        return state.session.model.info.context_window
    except PiCompactError:
        return None


def pick_number(arg: str, count: int, what: str, state: ReplState) -> int | None:
    """The 1-based number in ``arg`` as a 0-based index, or None after saying why it is not one."""
    try:
        number = int(arg)
    except ValueError:
        number = 0
    if not 1 <= number <= count:
        state.say(f"{what} takes a number from 1 to {count}, got {arg!r}." if count else
                  f"There is nothing to pick for {what} yet.", "yellow")
        return None
    return number - 1


# ---- /uncompact ------------------------------------------------------------------------------------


def uncompact(state: ReplState, arg: str) -> Outcome:
    if arg not in ("", "--force"):
        state.say("Usage: /uncompact or /uncompact --force.", "yellow")
        return "continue"
    session = state.session
    force = arg == "--force"
    window = state.run(lambda token: _window(state))  # may wait for the model to load; Esc cancels
    if window is None and not force:
        state.say("The window is unknown (no usable model), so the restored context cannot be checked; "
                  "/uncompact --force restores it unchecked.", "yellow")
        return "continue"
    try:
        outcome = session.uncompact(force=force)
    except PiCompactError as exc:
        state.say(str(exc).replace("Use --force", "Use /uncompact --force"), "red")
        return "continue"
    state.console.print(uncompact_block(outcome, auto=auto_compaction_on(session)))
    state.print_status()
    return "continue"


# ---- pins ------------------------------------------------------------------------------------------


def _budget(state: ReplState) -> int | None:
    """The pin budget in tokens (None while the window it depends on is unknown)."""
    setting = state.session.settings.compaction.pin_budget
    if setting is not None:
        return setting
    window = _window(state) if model_ready(state.session.model) else None
    return pin_budget(None, window) if window else None


def pin(state: ReplState, arg: str) -> Outcome:
    try:
        pins = state.session.pin(arg)
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    if pins is None:
        state.say("No message of yours to pin yet; /pin TEXT pins a note.", "yellow")
        return "continue"
    tokens = _tokens(state)
    state.say(f"Pinned as pin {len(pins)} (~{tokens(pins[-1].text):,} tokens): it is sent to the model with every "
              "request, whatever compaction summarizes.", "green")
    budget = _budget(state)
    warning = budget_warning(pins, budget, tokens) if budget is not None else None
    if warning is not None:
        state.say(warning, "yellow")
    return "continue"


def pins(state: ReplState, arg: str) -> Outcome:
    tokens = _tokens(state)
    budget = _budget(state)
    state.console.print(pins_table(fold_pins(state.session.store.branch()), tokens, budget or 0))
    return "continue"


def unpin(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    pins = fold_pins(store.branch())
    if not pins:
        state.say("No pins on this branch: /pin pins your last message (or /pin TEXT), /pins lists them.", "yellow")
        return "continue"
    index = pick_number(arg, len(pins), "/unpin", state)
    if index is None:
        return "continue"
    try:
        state.session.unpin(pins[index])
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.say(f"Unpinned pin {index + 1}; {len(pins) - 1} left.", "green")
    return "continue"
