"""Human-readable rendering of a dry-run compaction plan (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pi_compact.compaction.tokens import Calibration


def render_dry_run(
    console: Console, report: dict[str, Any], *, session: str, window: int, threshold: int, nothing: str | None = None
) -> None:
    """Print what compacting would do: tokens now / window, verdict, the cut and the file lists; with
    ``nothing`` (the sentence ``compact`` would answer: nothing to summarize) that sentence instead of a plan."""
    tokens = int(report["context_tokens"])
    percent = tokens / window * 100 if window else 0.0
    verdict = "yes" if report["should_compact"] else "no"
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Session", Text(session))
    table.add_row("Context", Text(f"{tokens:,} / {window:,} tokens ({percent:.1f}%)"))
    calibration = report.get("calibration")
    if calibration is not None:  # the auto estimator: say by how much its estimates were scaled
        table.add_row("Estimate", Text(Calibration(
            calibration["factor"], calibration["replies"], calibration.get("overhead", 0.0),
            calibration.get("structured")).describe()))
    plan = report.get("plan")
    if plan is None or nothing is not None:
        # Past the threshold yet nothing to summarize: an automatic compaction would do nothing either.
        but = ", but it would find nothing to summarize" if report["should_compact"] else ""
        table.add_row("Auto-compaction", Text(f"{verdict} (threshold {threshold:,} tokens){but}"))
        table.add_row("Plan", Text(nothing or "nothing to compact (the session ends with a compaction or is empty)"))
        console.print(table)
        return
    table.add_row("Auto-compaction", Text(f"{verdict} (threshold {threshold:,} tokens)"))
    kept = len(report["context_roles"])
    table.add_row("Cut at", Text(f"entry {plan['first_kept_entry_id']}"))
    table.add_row("Summarized", Text(_entries(len(plan["summarize_entry_ids"]))))
    if plan["is_split_turn"]:
        table.add_row("Split turn", Text(f"yes, {_entries(len(plan['turn_prefix_entry_ids']))} in the turn prefix"))
    else:
        table.add_row("Split turn", Text("no"))
    table.add_row("Context messages now", Text(str(kept)))
    table.add_row("Previous summary", Text("carried forward" if plan["previous_summary"] else "none"))
    table.add_row("Files read", Text(", ".join(plan["read_files"]) or "none"))
    table.add_row("Files modified", Text(", ".join(plan["modified_files"]) or "none"))
    console.print(table)


def _entries(count: int) -> str:
    return f"{count:,} {'entry' if count == 1 else 'entries'}"
