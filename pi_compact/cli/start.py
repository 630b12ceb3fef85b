"""The main command: check the flags (``StartFlags``), resolve the options once, then print one answer or open
the terminal."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pi_compact.cli.choices import choose_model, load_settings
from pi_compact.cli.exits import report
from pi_compact.errors import PiCompactError, UsageError, raise_errors

if TYPE_CHECKING:
    from pi_compact.options import AppOptions


@dataclass(frozen=True)
class StartFlags:
    """The main command's flags as parsed (one field per ``flags.MAIN`` entry but ``--version``).

    ``check`` refuses what no run can use; ``options`` turns the rest into the run's ``AppOptions``.
    """

    prompt: str | None = None  # -p
    mode: str = "text"
    model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    context_window: int | None = None
    max_turns: int | None = None
    session: Path | None = None
    continue_recent: bool = False
    resume: bool = False
    no_session: bool = False
    no_auto_compact: bool = False
    extension: list[Path] | None = field(default=None, hash=False)
    session_dir: str | None = None
    approve: str | None = None
    compaction_model: str | None = None
    local_model_path: Path | None = None
    trust_project: bool = False
    initial_message: str | None = None  # the positional prompt words (``argv.split_prompt_words``)
    thinking: str | None = None

    def check(self) -> None:
        """Raise ``UsageError`` (one sentence naming the flag) for a value or a combination no run can use."""
        if self.mode not in ("text", "json"):
            raise UsageError(f"--mode must be text or json, got {self.mode!r}.")
        if self.context_window is not None and self.context_window <= 0:
            raise UsageError(f"--context-window must be a positive number of tokens, got {self.context_window}.")
        if self.max_turns is not None and self.max_turns <= 0:
            raise UsageError(f"--max-turns must be a positive number of model replies, got {self.max_turns}.")
        if self.approve not in (None, "none", "edits", "all"):
            raise UsageError(f"--approve must be none, edits or all, got {self.approve!r}.")
        _check_thinking(self.thinking)
        if self.session is not None and self.no_session:
            raise UsageError("--session and --no-session cannot be used together.")

    def options(self, cwd: Path, prompt: str | None) -> AppOptions:
        """The run's options: ``prompt`` is what print mode answers (None: the terminal opens)."""
        from pi_compact.options import AppOptions

        return AppOptions(
            cwd=cwd, prompt=prompt, mode=self.mode, model=self.model, api_base=self.api_base, api_key=self.api_key,
            context_window=self.context_window, session=self.session, continue_recent=self.continue_recent,
            no_session=self.no_session, auto_compact=not self.no_auto_compact, extensions=tuple(self.extension or ()),
            session_dir=self.session_dir, approve=self.approve, compaction_model=self.compaction_model,
            local_model_path=str(self.local_model_path) if self.local_model_path else None,
            trust_project=self.trust_project, thinking=self.thinking, max_turns=self.max_turns,
        )


def start(flags: StartFlags) -> int:
    """Run what the flags ask for; returns the exit code."""
    try:
        flags.check()
        from pi_compact.cli.argv import plan_start, read_piped_stdin

        plan = plan_start(flags.prompt, [flags.initial_message] if flags.initial_message else [],
                          read_piped_stdin(sys.stdin))
        if plan.print_prompt is not None and not plan.print_prompt.strip():
            # An empty prompt is not a question: the model would invent a task and run tools on it.
            raise UsageError("-p needs a prompt: it was empty. Pass the question, e.g. -p \"why does the test fail?\".")
        options = flags.options(Path.cwd(), plan.print_prompt)
        from pi_compact.ui.trust_prompt import policy

        # Only the terminal can ask whether to trust the project; a printed run applies a remembered answer.
        loaded = load_settings(options.cwd, options.settings_overrides(),
                               policy(flags.trust_project, options.prompt is None))
        # The model is chosen here, once; everything downstream reads options.model.
        options = replace(options, model=choose_model(flags.model, loaded.settings),
                          model_from_settings=not flags.model)
        if flags.resume and options.prompt is None and flags.session is None:
            from pi_compact.paths import resolve_session_dir
            from pi_compact.ui.commands.resume import pick_at_start

            directory = resolve_session_dir(options.cwd, flag=flags.session_dir, setting=loaded.settings.session_dir)
            options = replace(options, session=pick_at_start(directory))
        if options.prompt is not None:
            from pi_compact.cli.wiring import run_print_mode

            return run_print_mode(options, loaded.settings, sources=loaded.sources)
        if flags.mode == "json":
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
