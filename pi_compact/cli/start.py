"""The main command: check the flags, resolve the options once, then print one answer or open the terminal."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from pi_compact.cli.choices import choose_model, load_settings
from pi_compact.cli.exits import report
from pi_compact.errors import PiCompactError, UsageError, raise_errors


def start(
    *, prompt: str | None, mode: str, model: str | None, api_base: str | None, api_key: str | None,
    context_window: int | None, session: Path | None, continue_recent: bool, resume: bool, no_session: bool,
    no_auto_compact: bool, extension: list[Path] | None, session_dir: str | None, approve: str | None,
    compaction_model: str | None, local_model_path: Path | None, trust_project: bool, initial_message: str | None,
    thinking: str | None = None,
    max_turns: int | None = None,
) -> int:
    """Run what the flags ask for; returns the exit code."""
    try:
        if mode not in ("text", "json"):
            raise UsageError(f"--mode must be text or json, got {mode!r}.")
        if context_window is not None and context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {context_window}.")
        if max_turns is not None and max_turns <= 0:
            raise UsageError(f"--max-turns must be a positive number of model replies, got {max_turns}.")
        if approve not in (None, "none", "edits", "all"):
            raise UsageError(f"--approve must be none, edits or all, got {approve!r}.")
        _check_thinking(thinking)
        if session is not None and no_session:
            raise UsageError("--session and --no-session cannot be used together.")
        from pi_compact.cli.argv import plan_start, read_piped_stdin
        from pi_compact.options import AppOptions

        plan = plan_start(prompt, [initial_message] if initial_message else [], read_piped_stdin(sys.stdin))
        if plan.print_prompt is not None and not plan.print_prompt.strip():
            # An empty prompt is not a question: the model would invent a task and run tools on it.
            raise UsageError("-p needs a prompt: it was empty. Pass the question, e.g. -p \"why does the test fail?\".")
        options = AppOptions(
            cwd=Path.cwd(), prompt=plan.print_prompt, mode=mode, model=model, api_base=api_base, api_key=api_key,
            context_window=context_window, session=session, continue_recent=continue_recent,
            no_session=no_session, auto_compact=not no_auto_compact, extensions=tuple(extension or ()),
            session_dir=session_dir, approve=approve, compaction_model=compaction_model,
            local_model_path=str(local_model_path) if local_model_path else None, trust_project=trust_project,
            thinking=thinking,
            max_turns=max_turns,
        )
        from pi_compact.ui.trust_prompt import policy

        # Only the terminal can ask whether to trust the project; a printed run applies a remembered answer.
        loaded = load_settings(options.cwd, options.settings_overrides(), policy(trust_project, options.prompt is None))
        # The model is chosen here, once; everything downstream reads options.model.
        options = replace(options, model=choose_model(model, loaded.settings), model_from_settings=not model)
        if resume and options.prompt is None and session is None:
            from pi_compact.paths import resolve_session_dir
            from pi_compact.ui.commands.resume import pick_at_start

            directory = resolve_session_dir(options.cwd, flag=session_dir, setting=loaded.settings.session_dir)
            options = replace(options, session=pick_at_start(directory))
        if options.prompt is not None:
            from pi_compact.cli.wiring import run_print_mode

            return run_print_mode(options, loaded.settings, sources=loaded.sources)
        if mode == "json":
            raise UsageError("--mode json needs a prompt: pass -p PROMPT.")
        from pi_compact.cli.wiring import AppRuntimes
        from pi_compact.ui.repl import run_repl

        return run_repl(AppRuntimes(options), loaded, first_message=plan.first_message)
    except PiCompactError as exc:
        if raise_errors():
            raise
        return report(exc)


def _check_thinking(thinking: str | None) -> None:
    from pi_compact.llm.thinking import LEVELS

    if thinking is not None and thinking not in LEVELS:
        raise UsageError(f"--thinking must be one of {', '.join(LEVELS)}, got {thinking!r}.")
