"""How a compaction looks in the terminal: the spinner text while it runs, the block when it ends.

Shared by the REPL and ``pi-compact compact``. Text from the session (summaries, errors) is never
interpreted as rich markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from pi_compact.agent.compaction.reasons import CompactionReason, model_answered, words
from pi_compact.agent.events import CompactionEnd
from pi_compact.ui.renderer_text import clean
from pi_compact.usage import LOCAL_PROVIDER, cost_text, usage_count, usage_tokens

if TYPE_CHECKING:
    from pi_compact.llm.failures import FailureKind

CANCEL_HINT = "Esc or Ctrl-C to cancel"


def spinner_text(
    reason: CompactionReason, context_percent: float | None, elapsed_s: float | None, retry: str | None = None
) -> str:
    """The live status line while a compaction runs; ``retry`` is a ``retry_label`` while one is pending.
    ``elapsed_s`` None: no seconds (the toolbar below shows the one clock)."""
    label = words(reason).label(context_percent)
    if retry:
        label = f"{label} {retry}"
    seconds = "" if elapsed_s is None else f" {elapsed_s:.0f}s"
    return f"{label}{seconds} ({CANCEL_HINT})"


# What a retried failure is called on a status line, by its kind; a kind not listed is "an error".
_CAUSES: dict[str, str] = {"timeout": "a timeout", "connection": "a connection error", "empty_reply": "an empty reply"}


def retry_label(attempt: int, max_attempts: int, kind: FailureKind, status: int | None = None) -> str:
    """"retrying (2/3) after 500…": which retry this is and what failed (chosen by the failure's kind and
    status, never read from the provider's text), short enough for a status line."""
    if kind in _CAUSES:
        cause = _CAUSES[kind]
    elif kind == "rate_limit":  # whatever status carried it (a 400 with a throttling text): a 429 in effect
        cause = "429"
    elif status is not None:
        cause = str(status)
    else:
        cause = "an error"
    return f"retrying ({attempt}/{max_attempts}) after {cause}…"


def _advice(event: CompactionEnd, message: str) -> str:
    lowered = message.lower()
    if event.skipped is not None:
        return ""
    if "api key" in lowered or "environment variable" in lowered:
        return ""  # the message already says which variable to set
    return words(event.reason).advice


def end_renderable(event: CompactionEnd, duration_s: float, *, in_repl: bool = True) -> RenderableType:
    """The block shown when a compaction ends: result, cancel or error."""
    if event.aborted:
        return Text("Compaction cancelled, nothing changed.", style="yellow")
    if event.result is None:
        message = event.error_message or "Nothing was compacted."
        advice = _advice(event, message) if in_repl else ""
        # (An "already compacted" skip has always been shown in red, like a failure.)
        style = "yellow" if event.skipped in ("no_messages", "too_small", "no_gain", "loop_guard") else "red"
        return Text(message + (f" {advice}" if advice else ""), style=style)
    return result_block(event.result, duration_s, in_repl=in_repl)


def result_block(result: dict[str, Any], duration_s: float, *, in_repl: bool = True) -> RenderableType:
    """Tokens before → after, what was summarized and kept, files, source and duration."""
    details: dict[str, Any] = result.get("details") or {}
    before = int(result.get("tokensBefore") or 0)
    after = int(result.get("estimatedTokensAfter") or 0)
    source = details.get("source", "model")
    lines = [
        Text.assemble(("Context ", "bold"), f"{before:,} → ~{after:,} tokens"),
        Text(
            f"Summarized {_count(details.get('summarizedEntries'), 'entry', 'entries')}, "
            f"kept {_count(details.get('keptMessages'), 'message', 'messages')}"
            + (" (split turn)" if details.get("splitTurn") else "")
        ),
        *([Text("Kept more than keepRecentTokens: nothing after the message that filled it could start the kept "
                "part.", style="yellow")] if details.get("keptOverBudget") else []),
        Text(
            f"Files: {len(details.get('readFiles') or [])} read, {len(details.get('modifiedFiles') or [])} modified"
        ),
    ]
    usage = details.get("usage") if isinstance(details.get("usage"), dict) else None
    spent = spent_text(usage, details.get("summaryModel")) if usage is not None else ""
    if source == "fallback":
        lines.append(Text(f"Summary built without a model: {details.get('error', 'the model failed')}", style="yellow"))
        if usage is not None and usage_tokens(usage):
            spent_on = "The model's unused answers" if model_answered(details) else "Its failed summary requests"
            lines.append(Text(f"{spent_on}{spent}", style="dim"))
    elif source == "model" and details.get("summaryModel"):
        lines.append(Text(f"Summary by the model {details['summaryModel']}{spent}", style="dim"))
    else:
        ahead = ", made in the background" if details.get("background") else ""
        lines.append(Text(f"Summary by the {source}{ahead}", style="dim"))
    hint = " · /summary shows the summary" if in_repl else ""
    lines.append(Text(f"{duration_s:.1f}s{hint}", style="dim"))
    title = Text("[compaction]", style="bold cyan")
    return Panel(Group(*lines), title=title, title_align="left", border_style="cyan", expand=False)


def spent_text(usage: dict[str, Any], model: Any = None) -> str:
    """" · 12,345 tokens in (12,000 from the cache), 678 out · $0.0031" (input counts cache reads and
    writes too; the part read from the provider's cache is named, since it is what a summary asked on
    the chat request's prefix saves); the embedded local model (``model`` "local") costs nothing: "free"."""
    output = usage_count(usage, "output")
    cost = "free" if model == LOCAL_PROVIDER else cost_text(usage)
    cached = usage_count(usage, "cacheRead")
    from_cache = f" ({cached:,} from the cache)" if cached else ""
    return f" · {usage_tokens(usage) - output:,} tokens in{from_cache}, {output:,} out · {cost}"


def _count(value: Any, one: str, many: str) -> str:
    if not isinstance(value, int):
        return f"? {many}"
    return f"{value:,} {one if value == 1 else many}"


def summary_renderable(summary: str, tokens_before: int) -> RenderableType:
    """The full summary (``/summary``), as markdown."""
    from rich.markdown import Markdown

    # Markdown keeps escape sequences: a summary written by a model must not set the clipboard (OSC 52).
    return Panel(Markdown(clean(summary)), title=f"Compacted from {tokens_before:,} tokens", title_align="left",
                 border_style="cyan")
