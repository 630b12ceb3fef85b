"""``pi-compact compact SESSION`` without --dry-run: summarize with a real model and append the entry.

The compaction itself is ``agent.compaction.offline``; this module builds its models (the composition
root's part) and prints what it reports. Exits 0 (compacted, nothing to compact, or nothing gained), 1
(nothing written), ``EXIT_FALLBACK`` (a model-free summary; ``--no-fallback`` makes that a 1) or 130
(Ctrl-C: the file stays byte-identical). The summary reasons at the session's thinking level, as the
terminal's compactions of the same file would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from pi_compact.agent.compaction.offline import OfflineJob, OfflineListener, compact_offline, offline_engine
from pi_compact.agent.compaction.reasons import model_answered
from pi_compact.agent.events import Retry, SessionEvent
from pi_compact.cancel import CancelToken
from pi_compact.cli.choices import CompactOptions, warn
from pi_compact.cli.exits import EXIT_CANCELLED, EXIT_FAILED, EXIT_FALLBACK
from pi_compact.cli.wiring import system_prompt_for
from pi_compact.settings import Settings
from pi_compact.signals import cancel_on_sigint

if TYPE_CHECKING:
    from pi_compact.agent.tools import Tool
    from pi_compact.llm.protocol import ChatModel, ModelInfo


@dataclass(frozen=True)
class FlagModels:
    """The command's models from its flags (``agent.compaction.offline.CommandModels``)."""

    model: str | None
    api_base: str | None = None
    api_key: str | None = None
    context_window: int | None = None

    def resolve(self, settings: Settings) -> ModelInfo:
        from pi_compact.llm.resolve import resolve_model

        return resolve_model(self.model, api_base=self.api_base, api_key=self.api_key,
                             context_window=self.context_window, settings=settings)

    def build(self, info: ModelInfo, settings: Settings) -> ChatModel:
        from pi_compact.llm.resolve import create_model

        return create_model(info, api_base=self.api_base, api_key=self.api_key, settings=settings)

    def summarizer(self, name: str, chat_model: str, settings: Settings) -> ChatModel:
        from pi_compact.llm.resolve import compaction_endpoint, create_model, resolve_model

        base, key = compaction_endpoint(name, chat_model, api_base=self.api_base, api_key=self.api_key,
                                        settings=settings)
        return create_model(resolve_model(name, settings=settings), api_base=base, api_key=key, settings=settings)


def offline_parts(options: CompactOptions, sources: Mapping[str, str] | None) -> tuple[OfflineJob, FlagModels]:
    """The job and models of ``compact FILE`` from its flags: the compaction and its dry run read the same."""
    job = OfflineJob(options.session, Path.cwd(), instructions=options.instructions,
                     allow_fallback=not options.no_fallback, context_window=options.context_window, sources=sources)
    return job, FlagModels(options.model, options.api_base, options.api_key, options.context_window)


def dry_run_engine(options: CompactOptions, settings: Settings, sources: Mapping[str, str] | None) -> str | None:
    """The engine ``compact FILE`` would run first, and why (``offline.offline_engine``): its compactor built
    as the compaction builds it, nothing asked of the model; the settings' warnings were said by the dry run."""
    job, models = offline_parts(options, sources)
    quiet = OfflineListener(lambda _warnings: None, lambda _writer: None, lambda _event: None)
    return offline_engine(job, settings, models, lambda tools: system_prompt_for(Path.cwd(), tools, lambda _t: None),
                          quiet)


def compact_file(options: CompactOptions, settings: Settings, sources: Mapping[str, str] | None = None) -> int:
    """Compact the session; prints the outcome; returns the exit code."""
    from pi_compact.ui.compaction_view import end_renderable

    console = Console(stderr=False)
    err = Console(stderr=True)

    def emit(event: SessionEvent) -> None:  # provider retries are reported on stderr as they happen
        if isinstance(event, Retry):
            err.print(Text(f"Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:g} s "
                           f"after: {event.error_message}", style="yellow"))

    def starting(writer: str) -> None:
        err.print(Text(f"Compacting {options.session} with {writer}… (Ctrl-C to cancel)"), soft_wrap=True)

    def system_prompt(tools: Sequence[Tool]) -> str:
        return system_prompt_for(Path.cwd(), tools, lambda text: err.print(Text(text, style="yellow")))

    job, models = offline_parts(options, sources)
    outcome = compact_offline(job, settings, models, system_prompt, OfflineListener(warn, starting, emit),
                              CancelToken(), guard=cancel_on_sigint)
    if outcome.not_needed is not None:
        console.print(Text(f"{outcome.not_needed} The file was not changed.", style="yellow"))
        return 0
    end = outcome.end
    assert end is not None
    console.print(end_renderable(end, outcome.seconds, in_repl=False))
    if end.result is not None:
        details = end.result.get("details") or {}
        console.print(Text(f"Kept from entry {end.result['firstKeptEntryId']}; "
                            f"read: {', '.join(details.get('readFiles') or []) or 'none'}; "
                            f"modified: {', '.join(details.get('modifiedFiles') or []) or 'none'}"))
        if details.get("fallback"):
            err.print(Text(f"{_fallback_cause(details)}, so the summary was built without it (exit code "
                           f"{EXIT_FALLBACK}). Pass --no-fallback to write nothing instead.", style="yellow"))
            return EXIT_FALLBACK
        return 0
    if end.aborted:
        return EXIT_CANCELLED
    # The budgets fitted to the model's window left nothing to summarize, or the summary (the model answered)
    # would not have made the context smaller: said above, and not a failure.
    if end.skipped is not None:
        return 0
    if options.no_fallback:
        err.print(Text("--no-fallback: no model-free summary was written; the file was not changed.",
                       style="yellow"))
    return EXIT_FAILED


def _fallback_cause(details: Mapping[str, Any]) -> str:
    """Why the model's summary was not used: it failed, or it answered and the answer was not usable."""
    error = str(details.get("error") or "").rstrip(".")
    if model_answered(details):
        return "The model answered, but its summary could not be used" + (f" ({error})" if error else "")
    return "The model failed"
