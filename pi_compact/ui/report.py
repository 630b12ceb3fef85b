"""Human-readable rendering of a dry-run compaction plan (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pi_compact.compaction.tokens import Calibration


def render_dry_run(console: Console, report: dict[str, Any], *, session: str, window: int, reserve: int) -> None:
    """Print what compacting would do: tokens now / window, verdict, the cut and the file lists."""
    tokens = int(report["context_tokens"])
    percent = tokens / window * 100 if window else 0.0
    threshold = window - reserve
    verdict = "yes" if report["should_compact"] else "no"
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Session", Text(session))
    table.add_row("Context", Text(f"{tokens:,} / {window:,} tokens ({percent:.1f}%)"))
    calibration = report.get("calibration")
    if calibration is not None:  # the auto estimator: say by how much its estimates were scaled
        table.add_row("Estimate", Text(Calibration(calibration["factor"], calibration["replies"]).describe()))
    table.add_row("Auto-compaction", Text(f"{verdict} (threshold {threshold:,} tokens)"))
    plan = report.get("plan")
    if plan is None:
        table.add_row("Plan", Text("nothing to compact (the session ends with a compaction or is empty)"))
        console.print(table)
        return
    kept = len(report["context_roles"])
    table.add_row("Cut at", Text(f"entry {plan['first_kept_entry_id']}"))
    table.add_row("Summarized", Text(f"{len(plan['summarize_entry_ids'])} entries"))
    if plan["is_split_turn"]:
        table.add_row("Split turn", Text(f"yes, {len(plan['turn_prefix_entry_ids'])} entries in the turn prefix"))
    else:
        table.add_row("Split turn", Text("no"))
    table.add_row("Context messages now", Text(str(kept)))
    table.add_row("Previous summary", Text("carried forward" if plan["previous_summary"] else "none"))
    table.add_row("Files read", Text(", ".join(plan["read_files"]) or "none"))
    table.add_row("Files modified", Text(", ".join(plan["modified_files"]) or "none"))
    console.print(table)
