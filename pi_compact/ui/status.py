"""Where the session stands, as the terminal shows it: the status line, ``/context``, ``/settings``, ``/session``.

Contract: reading state never blocks on the model. Until a ``LazyModel`` has resolved (litellm is
still importing in the background) the window and threshold are unknown and shown as "…", and the
token count is an estimate. Everything returned is a rich ``Text`` or ``Table`` built from plain
strings, so nothing from a session file is read as markup.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pi_compact.agent.compaction.recall import describe_latest
from pi_compact.agent.session import AgentSession
from pi_compact.cancel import CancelToken
from pi_compact.compaction.tokens import (
    assistant_usage,
    calculate_context_tokens,
    context_usage,
    estimate_text_tokens,
)
from pi_compact.llm.protocol import ChatModel
from pi_compact.llm.redact import redact
from pi_compact.options import AppOptions
from pi_compact.paths import global_settings_path, project_settings_path
from pi_compact.session.pins import pin_budget
from pi_compact.session.store import SessionStore
from pi_compact.settings.files import DEFAULT_SOURCE, LoadedSettings, describe, read_settings_file
from pi_compact.settings.freshness import changed_since
from pi_compact.settings.report import settings_items
from pi_compact.ui.context_parts import breakdown, why_no_window
from pi_compact.ui.tree_view import history_rows
from pi_compact.usage import session_totals, usage_count, usage_tokens

UNKNOWN = "…"
WARN_PERCENT = 70.0  # pi's footer turns to the warning colour here and to the error colour above 90 %
ALERT_PERCENT = 90.0


def model_ready(model: ChatModel) -> bool:
    """False only for a lazily resolved model that has not resolved yet (reading it would block)."""
    return model.ready


def loading_label(model: ChatModel) -> Callable[[], str]:
    """The spinner text while a model gets ready: its own progress (the local model's start) if it says."""
    return lambda: model.progress or "Loading the model library…"


def wait_ready(model: ChatModel, cancel: CancelToken) -> bool:
    """Wait until ``model`` can answer (the local one starts in the background); False when cancelled."""
    return model.wait_ready(cancel)


def auto_compaction_on(session: AgentSession) -> bool:
    """Whether automatic compaction will run: switched on, enabled, and not stopped by the loop guard."""
    return session.auto_compact and session.settings.compaction.enabled and not session.compaction_stopped


GUARD_STOPPED = "stopped by the loop guard for this session; /autocompact on turns it back on"


@dataclass(frozen=True)
class StatusInfo:
    """The numbers of the status line; ``window`` is None while the model is still resolving."""

    model: str
    tokens: int
    window: int | None
    threshold: int | None
    from_usage: bool
    auto_compact: bool
    session_name: str
    thinking: str = "off"  # the session's thinking level, shown when the model thinks
    cleared: int = 0  # tokens of tool output the request leaves out (``compaction.clearToolResults``)

    @property
    def percent(self) -> float | None:
        return self.tokens / self.window * 100 if self.window else None

    @property
    def tokens_left(self) -> int | None:
        return max(0, self.threshold - self.tokens) if self.threshold is not None else None


def session_name(session: AgentSession) -> str:
    path = session.store.path
    return path.name if path is not None else "in-memory session (--no-session)"


def gather_status(session: AgentSession, model_name: str) -> StatusInfo:
    """The status numbers now; ``model_name`` labels a model that has not resolved yet."""
    return replace(_gather_status(session, model_name), thinking=session.thinking_level,
                   cleared=session.cleared_tool_output()[1] if model_ready(session.model) else 0)


def _gather_status(session: AgentSession, model_name: str) -> StatusInfo:
    auto = auto_compaction_on(session)
    if model_ready(session.model):
        usage = session.context_usage()
        return StatusInfo(session.model.info.model, usage.tokens, usage.context_window, usage.threshold,
                          usage.from_usage, auto, session_name(session))
    tokens = session.estimated_size()
    return StatusInfo(model_name, tokens, None, None, False, auto, session_name(session))


def percent_style(percent: float | None) -> str:
    if percent is None:
        return "dim"
    if percent > ALERT_PERCENT:
        return "bold red"
    if percent > WARN_PERCENT:
        return "yellow"
    return "green"


def format_percent(percent: float) -> str:
    return f"{percent:.1f}%" if percent < 10 else f"{percent:.0f}%"


def status_text(info: StatusInfo) -> Text:
    """``model · tokens/window (pct) · N left before auto-compaction · session file``."""
    sep = (" · ", "dim")
    approx = "" if info.from_usage else "~"
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(info.model, style="bold")
    if info.thinking != "off":
        line.append(f" · thinking {info.thinking}", style="dim")
    line.append(*sep)
    if info.window is None:
        line.append(f"{approx}{info.tokens:,}/{UNKNOWN} tokens", style="dim")
    else:
        assert info.percent is not None
        line.append(f"{approx}{info.tokens:,}/{info.window:,} tokens ", style="dim")
        line.append(f"({format_percent(info.percent)})", style=percent_style(info.percent))
    if info.cleared:
        line.append(f" · {info.cleared:,} tool tokens cleared", style="dim")
    line.append(*sep)
    if not info.auto_compact:
        line.append("auto-compaction off", style="yellow")
    elif info.tokens_left is None:
        line.append(f"{UNKNOWN} left before auto-compaction", style="dim")
    else:
        line.append(f"{info.tokens_left:,} left before auto-compaction", style="dim")
    line.append(*sep)
    line.append(info.session_name, style="dim")
    return line


# --- /context -----------------------------------------------------------------------------------------


def _last_usage(session: AgentSession) -> tuple[Mapping[str, Any] | None, int]:
    """The newest usage in the live context, stale or not (``/context`` says which), and its index."""
    index = context_usage(session.messages, session.estimator).last_usage_index
    return (None, -1) if index is None else (assistant_usage(session.messages[index]), index)


# Where the context window came from (``ModelInfo.window_source``), as ``/context`` says it.
WINDOW_ORIGINS = {
    "flag": "--context-window",
    "settings": "settings (models.<name>.contextWindow)",
    "learned": "learned from the provider's overflow error",
    "litellm": "litellm's model data",
}


def context_report(session: AgentSession, model_name: str) -> Table:
    """Everything ``/context`` shows: size now, limits, the estimator, the last usage, the breakdown."""
    info = gather_status(session, model_name)
    compaction = session.plan.settings.compaction  # the budgets in force (the session's plan)
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    source = "provider usage + estimate" if info.from_usage else "estimate"
    if info.window is None:
        table.add_row("Context", Text(f"{info.tokens:,} tokens ({source}) / {UNKNOWN} window "
                                      f"({why_no_window(session.model)})"))
    else:
        assert info.percent is not None
        size = Text(f"{info.tokens:,} tokens ({source}) / {info.window:,} window ")
        size.append(f"({format_percent(info.percent)})", style=percent_style(info.percent))
        table.add_row("Context", size)
        origin = WINDOW_ORIGINS.get(session.model.info.window_source, session.model.info.window_source)
        table.add_row("Window from", Text(origin))
    threshold = f"{info.threshold:,}" if info.threshold is not None else UNKNOWN
    left = f"{info.tokens_left:,} tokens left" if info.tokens_left is not None else f"{UNKNOWN} left"
    state = left if info.auto_compact else "auto-compaction off"
    plan = session.plan
    kept_free = f"reserveTokens {compaction.reserve_tokens:,}" if plan.headroom <= compaction.reserve_tokens else \
        f"the output cap {plan.output_cap:,} and a {plan.margin:,} margin, over reserveTokens"
    table.add_row("Threshold", Text(f"{threshold} tokens (window − {kept_free}) · {state}"))
    if plan.output_cap:
        inside = f", thinking budget {plan.thinking_budget:,} inside" if plan.thinking_budget else ""
        table.add_row("Output", Text(f"{plan.output_cap:,} tokens a request{inside} (the same every request)"))
    table.add_row("Keep recent", Text(f"{compaction.keep_recent_tokens:,} tokens (keepRecentTokens)"))
    ahead = f" · in the background from {compaction.soft_threshold_percent} % of the threshold" \
        if compaction.background else ""
    table.add_row("Summarizer", Text(f"{compaction.model or 'the chat model'}{ahead}"))
    kind = "CJK-aware" if compaction.token_estimator == "auto" else "pi's chars/4"
    calibration = f" · {session.context_usage().calibration.describe()}" if compaction.token_estimator == "auto" \
        and model_ready(session.model) else ""
    table.add_row("Estimator", Text(f"{compaction.token_estimator} ({kind}){calibration}"))
    parts = breakdown(session, info.tokens)
    usage, index = _last_usage(session)
    if usage is None:
        table.add_row("Last usage", Text("none yet", style="dim"))
    else:
        # A usage recorded before the latest compaction measured a context that no longer exists.
        stale = parts.compacted and index < len(session.messages) - parts.new_count
        note = " · before the latest compaction, so not used" if stale else ""
        table.add_row("Last usage", Text(
            f"input {int(usage.get('input') or 0):,} · output {int(usage.get('output') or 0):,} · "
            f"cache read {int(usage.get('cacheRead') or 0):,} · total {calculate_context_tokens(usage):,}{note}"))
    kept, new = plural(parts.kept_count, "message"), plural(parts.new_count, "message")
    pins, extra_rows = history_rows(session.store.branch(), lambda text: estimate_text_tokens(
        text, compaction.token_estimator), pin_budget(compaction.pin_budget, info.window) if info.window else None)
    # Pins travel in the system prompt: their figure is part of this one, not one more part.
    fixed = f" · system prompt, tools and pins ~{parts.fixed_tokens:,} (pins {pins.removeprefix(' · pins ')})" \
        if pins else f" · system prompt and tools ~{parts.fixed_tokens:,}"
    if parts.compacted:
        table.add_row("Breakdown", Text(f"summary ~{parts.summary_tokens:,} · kept tail ~{parts.kept_tokens:,} "
                                        f"({kept}) · new ~{parts.new_tokens:,} ({new}){fixed}"))
    else:
        table.add_row("Breakdown", Text(f"not compacted · {new} ~{parts.new_tokens:,} tokens{fixed}"))
    for label, text in extra_rows:
        table.add_row(label, text)
    recalled = describe_latest(session.store.branch())
    if recalled is not None:
        table.add_row("Recalled", Text(recalled))
    if model_ready(session.model):
        table.add_row("Cleared", Text(cleared_text(*session.cleared_tool_output())))
    table.add_row("Compactions", Text(f"{session.compactions} in this session"))
    table.add_row("Cache", Text(session_totals(session.store.each_entry()).cache_text() + " (this session)"))
    return table


def cleared_text(count: int, tokens: int) -> str:
    """``/context``'s line on tool-result clearing (``compaction.clearToolResults``)."""
    if not count:
        return "no tool results cleared from the request"
    return (f"{plural(count, 'old tool result')} sent as stubs · ~{tokens:,} tokens of tool output left out of "
            "the request (the session file keeps them; recall reads them back)")


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def compacted_times(count: int) -> str:
    """pi's load message: "Session compacted 1 time" / "Session compacted N times"."""
    return f"Session compacted {plural(count, 'time')}"


def compaction_banner(session: AgentSession) -> str | None:
    """The resume banner's compaction line: it points at ``/summary`` only when this branch has a
    compaction to read (one undone by ``/uncompact`` or on another branch still counts in the file)."""
    count = session.compactions
    if not count:
        return None
    if any(e.get("type") == "compaction" for e in session.store.branch_tail()):
        return f"{compacted_times(count)} — /summary to read"
    return f"{compacted_times(count)}, none on this branch (undone with /uncompact, or on another branch)"


# --- /settings and /session ---------------------------------------------------------------------------


def short_path(path: str) -> str:
    """A source path with the home directory written as ``~``."""
    home = str(Path.home())
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path


def _source_text(source: str) -> Text:
    return Text(short_path(source), style="dim" if source == DEFAULT_SOURCE else "")


def _window_source(options: AppOptions, session: AgentSession, model: str) -> str:
    if options.context_window is not None and model == options.model:
        return "CLI flag --context-window"
    override = session.settings.model_override(model)
    if override is None and "/" in model:
        override = session.settings.model_override(model.split("/", 1)[1])
    if override is not None and override.context_window:
        return "models setting"
    return "the embedded model's runtime" if model == "local" else "litellm model map"


def _fitted_values(session: AgentSession) -> dict[str, tuple[int, Any]]:
    """Keys whose value in force is not the configured one, because the budgets were fitted to the
    model's window: (window, value in force). The same fitted settings ``/context`` and the threshold use."""
    if not model_ready(session.model):
        return {}
    configured = dict(settings_items(session.settings))
    window = session.model.info.context_window
    return {key: (window, value) for key, value in settings_items(session.plan.settings)
            if configured.get(key) != value}


def settings_table(
    loaded: LoadedSettings, options: AppOptions, session: AgentSession, model_name: str
) -> RenderableType:
    """Every effective setting, its value and where it came from (default, a settings file, a CLI flag)."""
    table = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
    table.add_column("setting", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", overflow="fold")  # a long path wraps whole, never cut to "…"
    fitted = _fitted_values(session)
    for key, value, source in describe(loaded):
        if key in fitted:  # the budget in force is not the one configured: show it, and what was configured
            window, in_force = fitted[key]
            source = f"fitted to the {window:,}-token window (configured: {json.dumps(value)}, {short_path(source)})"
            value = in_force
        # A proxy's password in an apiBase (http://user:secret@host) is not shown, as in error texts.
        table.add_row(Text(key), Text(redact(json.dumps(value, ensure_ascii=False), ())), _source_text(source))
    enabled_source = loaded.sources.get("compaction.enabled", DEFAULT_SOURCE)
    if not options.auto_compact:
        enabled_source = "CLI flag --no-auto-compact"
    elif session.compaction_stopped:
        enabled_source = GUARD_STOPPED
    elif session.auto_compact != options.auto_compact or \
            session.settings.compaction.enabled != loaded.settings.compaction.enabled:
        enabled_source = "/autocompact"
    table.add_row(Text("auto-compaction (now)", style="bold"), Text("on" if auto_compaction_on(session) else "off"),
                  _source_text(enabled_source))
    if options.model and not options.model_from_settings:
        model_source = "CLI flag --model"
    else:
        model_source = loaded.sources.get("defaultModel", DEFAULT_SOURCE)
    table.add_row(Text("model", style="bold"), Text(model_name), _source_text(model_source))
    if model_ready(session.model):
        info = session.model.info
        table.add_row(Text("context window", style="bold"), Text(f"{info.context_window:,}"),
                      _source_text(_window_source(options, session, info.model)))
    else:
        table.add_row(Text("context window", style="bold"), Text(UNKNOWN), Text("model still loading", style="dim"))
    files = Text("Settings files: ", style="dim")
    for label, path in (("global", global_settings_path()), ("project", project_settings_path(options.cwd))):
        # A file that could not be read as a whole counts as empty: say so here too, not only in the warning.
        ignored = any(w.startswith(f"Ignoring settings file {path}:") for w in loaded.warnings)
        state = " (absent)" if not path.is_file() else " (ignored: see the warning when it was read)" if ignored \
            else ""
        files.append(f"{label} {short_path(str(path))}{state}; ", style="dim")
    files.append("the project file wins, key by key.", style="dim")
    edited = changed_since(loaded.stamps)
    if not edited:
        return Group(table, files)
    names = " and ".join(short_path(path) for path in edited)
    stale = Text(f"{names} changed since the settings were read: the values above are the ones read then; "
                 "/settings reload applies the file as it is now.", style="yellow")
    for name in edited:  # a file broken by the edit would be ignored whole by that reload: say so before
        broken = [w for w in read_settings_file(Path(name))[1] if w.startswith("Ignoring settings file")]
        stale.append("".join(f" {w.replace('Ignoring settings file', 'A reload would ignore', 1)}" for w in broken))
    return Group(table, files, stale)


def session_table(store: SessionStore, compactions: int) -> Table:
    """``/session``: the file, its id, how many entries and bytes, how often it was compacted, and the
    tokens and cost of every model call it records (replies and compaction summaries)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    if store.path is None:
        table.add_row("File", Text("none: in memory only (--no-session)"))
    else:
        table.add_row("File", Text(str(store.path)))
        try:
            size = f"{store.path.stat().st_size:,} bytes"
        except OSError:
            size = "not written yet (the file appears with the first answer)"
        table.add_row("Size", Text(size))
    table.add_row("Id", Text(store.session_id))
    table.add_row("Entries", Text(f"{store.entry_count():,}"))
    table.add_row("Compactions", Text(str(compactions)))
    totals = session_totals(store.each_entry())  # every branch: abandoned ones were paid for too
    usage = totals.usage
    table.add_row("Tokens", Text(
        f"{usage_count(usage, 'input'):,} in · {usage_count(usage, 'output'):,} out · "
        f"{usage_count(usage, 'cacheRead'):,} cache read · {usage_count(usage, 'cacheWrite'):,} cache write "
        f"({usage_tokens(usage):,} total, replies and compactions)"))
    table.add_row("Cost", Text(totals.cost_text() if totals.calls else "none yet"))
    table.add_row("Cache", Text(totals.cache_text()))
    summaries = session_totals(e for e in store.each_entry() if e.get("type") == "compaction")
    if summaries.calls:  # what the compaction summaries alone cost, and how much of it the cache served
        spent = summaries.usage
        table.add_row("Summaries", Text(
            f"{usage_tokens(spent) - usage_count(spent, 'output'):,} in ({usage_count(spent, 'cacheRead'):,} "
            f"from the cache) · {usage_count(spent, 'output'):,} out · {summaries.cost_text()}"))
    return table
