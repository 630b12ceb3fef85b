"""``/settings`` and ``/model``: every effective setting and its source, reloading them, switching models."""

from __future__ import annotations

from pi_compact.errors import PiCompactError
from pi_compact.llm.protocol import ChatModel
from pi_compact.settings.files import load_settings
from pi_compact.settings.trust import TrustPolicy
from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.status import model_ready, settings_table


def settings(state: ReplState, arg: str) -> Outcome:
    if arg == "reload":
        # flags still win; what the start trusted stays trusted, anything new needs --trust-project or a
        # remembered answer (a model's write to .pi/settings.json must not apply on a reload)
        trust = TrustPolicy(flag=state.options.trust_project, accepted=state.loaded.trusted)
        loaded = load_settings(state.options.cwd, state.options.settings_overrides(), trust=trust)
        auto = state.session.auto_compact
        state.loaded = loaded
        state.session.set_settings(loaded.settings)
        if not auto:
            state.session.set_auto_compaction(False)  # a /autocompact off or --no-auto-compact outlives a reload
        state.renderer.show_thinking = loaded.settings.show_thinking
        # The same warnings as at start: the files' and, once the model is known, the values that do not fit
        # its window (issue 35: a reload said "0 warnings" where the start had warned).
        fitted = state.session.window_plan(loaded.sources).warnings if model_ready(state.session.model) else ()
        warnings = [*loaded.warnings, *fitted]
        for warning in warnings:
            state.say(f"warning: {warning}", "yellow")
        count = len(warnings)
        state.say(f"Settings reloaded ({count} warning{'' if count == 1 else 's'}).", "green")
        return "continue"
    if arg:
        state.say("Usage: /settings or /settings reload.", "yellow")
        return "continue"
    state.console.print(settings_table(state.loaded, state.options, state.session, state.model_name))
    return "continue"


def model_names(state: ReplState) -> list[str]:
    """The models ``/model`` can switch to: configured ones, the current one and the ``--model`` flag."""
    names = [name for name, _override in state.session.settings.models]
    current = state.session.model.info.model if model_ready(state.session.model) else state.model_name
    known = {*names, current, *([state.options.model] if state.options.model else [])}
    return sorted(name for name in known if name and not name.startswith("("))  # not "(no model)"


def model(state: ReplState, arg: str) -> Outcome:
    session = state.session
    if not arg:
        if model_ready(session.model):
            info = session.model.info
            output = f"{info.max_output_tokens:,}" if info.max_output_tokens else "unknown"
            state.say(f"Model {info.model}: window {info.context_window:,} tokens, max output {output}.")
        else:
            state.say(f"Model {state.model_name} (still loading).")
        others = [name for name in model_names(state) if name != state.model_name]
        if others:
            state.say("Switch with /model NAME; configured: " + ", ".join(others), "dim")
        return "continue"
    try:
        state.renderer.working(f"Loading {arg}…")
        try:
            chosen: ChatModel = state.runtimes.make_model(arg, session.settings)
        finally:
            state.renderer.close()
        state.run(lambda token: session.set_model(chosen, token))
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.model_name = chosen.info.model
    state.say(f"Switched to {chosen.info.model} (window {chosen.info.context_window:,} tokens).", "green")
    state.print_status()
    return "continue"
