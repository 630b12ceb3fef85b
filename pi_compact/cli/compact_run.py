"""``pi-compact compact SESSION`` without --dry-run: summarize with a real model and append the entry.

Exits 0 (compacted, nothing to compact, or nothing gained), 1 (nothing written), ``EXIT_FALLBACK`` (a
model-free summary; ``--no-fallback`` makes that a 1) or 130 (Ctrl-C: the file stays byte-identical). The
summary reasons at the session's thinking level, as the terminal's compactions of the same file would.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from pi_compact.agent.compaction.live_context import LiveContext
from pi_compact.agent.compaction.pipeline import Compactor
from pi_compact.agent.compaction.reasons import SKIP_TEXT, model_answered, too_small_text
from pi_compact.agent.compaction.summarizer import Summarizer
from pi_compact.agent.events import CompactionEnd, Retry, SessionEvent
from pi_compact.agent.opening import recorded_level
from pi_compact.agent.request import Requests
from pi_compact.cancel import CancelToken
from pi_compact.cli.choices import CompactOptions, fitted_settings
from pi_compact.cli.exits import EXIT_CANCELLED, EXIT_FAILED, EXIT_FALLBACK
from pi_compact.cli.wiring import session_tools, system_prompt_for
from pi_compact.clock import now_ms
from pi_compact.compaction.plan import prepare_compaction, skip_reason
from pi_compact.compaction.tokens import estimate_tokens_auto
from pi_compact.llm.thinking import DEFAULT_LEVEL, LEVELS, clamp_level
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings
from pi_compact.signals import cancel_on_sigint


# Provider retries are reported on stderr as they happen.
def compact_file(
    options: CompactOptions, settings: Settings, store: SessionStore, sources: Mapping[str, str] | None = None
) -> int:
    """Compact the session; prints the outcome; returns the exit code."""
    from pi_compact.llm.resolve import create_model, resolve_model
    from pi_compact.ui.compaction_view import end_renderable

    if options.context_window is not None:  # the window is known without the model: check before planning
        settings = fitted_settings(settings, options.context_window, None, sources)
    branch = store.branch_tail()  # what the plan reads: older entries of a long session stay unread
    plan = prepare_compaction(branch, settings.compaction)
    planned_with = settings.compaction
    skip = skip_reason(branch, plan)
    if skip is not None:
        # Answer at once: no need to load the model (litellm) to say there is nothing to do. Too small: say
        # how to compact anyway, as the terminal's /compact does, with this command's flag.
        text = SKIP_TEXT[skip] if skip != "too_small" or plan is None else too_small_text(
            sum(estimate_tokens_auto(m) for m in plan.kept_messages), settings.compaction.keep_recent_tokens,
            hint="--keep-recent-tokens")
        Console().print(Text(f"{text} The file was not changed.", style="yellow"))
        return 0
    info = resolve_model(options.model, api_base=options.api_base, api_key=options.api_key,
                         context_window=options.context_window, settings=settings)
    settings = fitted_settings(settings, info.context_window, info.model, sources)  # silent if already fitted
    model = create_model(info, api_base=options.api_base, api_key=options.api_key, settings=settings)
    summarizer = _summarizer(options, settings, info.model)
    console = Console(stderr=False)
    err = Console(stderr=True)
    ends: list[CompactionEnd] = []
    started = time.monotonic()

    def emit(event: SessionEvent) -> None:
        if isinstance(event, CompactionEnd):
            ends.append(event)
        elif isinstance(event, Retry):
            err.print(Text(f"Retrying ({event.attempt}/{event.max_attempts}) in {event.delay_ms / 1000:g} s "
                           f"after: {event.error_message}", style="yellow"))
        elif event.type == "compaction_start":
            writer = summarizer.name if summarizer is not None else info.model
            err.print(Text(f"Compacting {options.session} with {writer}… (Ctrl-C to cancel)"), soft_wrap=True)

    token = CancelToken()
    # Before and after counted as the terminal counts them: the system prompt and tools every request
    # carries, and the session's own calibration, so the block's figures are the next request's.
    context = LiveContext(store, settings.compaction.token_estimator)
    requests = Requests(store, system_prompt_for(Path.cwd(), tools := session_tools(store, settings),
                                                 lambda text: err.print(Text(text, style="yellow"))),
                        tools, now_ms)
    context.overhead = requests.overhead
    level = session_level(store, settings)
    # The request the session's next turn would send: the provider may still hold its prefix from the last
    # run, and the summary is asked on it where that is expected to cost less (``prefix_cost``).
    compactor = Compactor(store, model, settings, emit, allow_fallback=not options.no_fallback, summarizer=summarizer,
                          thinking=level,
                          measure=lambda messages: context.size_of(messages, model),
                          size_now=lambda: context.usage_for(model, settings.compaction).tokens,
                          estimator=context.estimator_of(model),
                          last_request=lambda: requests.peek(context.messages, settings,
                                                             clamp_level(info, level).level))
    # The plan above is used unless fitting the settings to the model's window changed them.
    planned = (branch, plan) if settings.compaction == planned_with else None
    with cancel_on_sigint(token):
        compactor.run("manual", instructions=options.instructions, cancel=token, planned=planned)
    end = ends[-1]
    console.print(end_renderable(end, time.monotonic() - started, in_repl=False))
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


def session_level(store: SessionStore, settings: Settings) -> str:
    """The level the terminal would resume this session at without ``--thinking``: the file's latest
    ``thinking_level_change``, else ``defaultThinkingLevel``, else pi's default (``agent.opening``)."""
    level = recorded_level(store) or settings.default_thinking_level
    return level if level in LEVELS else DEFAULT_LEVEL


def _fallback_cause(details: Mapping[str, Any]) -> str:
    """Why the model's summary was not used: it failed, or it answered and the answer was not usable."""
    error = str(details.get("error") or "").rstrip(".")
    if model_answered(details):
        return "The model answered, but its summary could not be used" + (f" ({error})" if error else "")
    return "The model failed"


def _summarizer(options: CompactOptions, settings: Settings, chat_model: str) -> Summarizer | None:
    """The ``compaction.model`` (``--compaction-model``) that writes the summary, if one is set."""
    from pi_compact.llm.resolve import compaction_endpoint, create_model, resolve_model

    name = settings.compaction.model
    if not name or name == chat_model:
        return None
    base, key = compaction_endpoint(name, chat_model, api_base=options.api_base, api_key=options.api_key,
                                    settings=settings)
    return Summarizer(name, lambda: create_model(resolve_model(name, settings=settings), api_base=base,
                                                 api_key=key, settings=settings))

