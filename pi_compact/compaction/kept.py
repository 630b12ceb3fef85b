"""What a summary keeps by construction, whatever the model wrote (pure; no model call).

The files that shell commands wrote join pi's file lists; ids the user typed, names the edits added, the
settings the user asked for and the newest failed test run that the summary does not hold are appended
under Critical Context, and the user's decisions with their reasons and agreed next steps under their
headings, word for word. Each addition is recorded for ``details.qualityGate`` (``shellFilesAdded``,
``idsAdded``, ``namesAdded``, ``decisionsAdded``, ``nextStepsAdded``, ``settingsAdded``, ``testRunAdded``).
"""

from __future__ import annotations

from typing import Any

from pi_compact.compaction.added_names import add_missing_names, added_names
from pi_compact.compaction.fileops import with_modified
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.runs import add_failed_run, newest_failed_run
from pi_compact.compaction.shell_writes import shell_written_files
from pi_compact.compaction.stated import (
    add_missing_statements,
    stated_decisions,
    stated_next_steps,
    stated_settings,
)
from pi_compact.compaction.user_ids import add_missing_ids, user_ids


def file_lists_with_shell_writes(plan: CompactionPlan) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """(read-only files, modified files, gate records): the plan's lists (pi's, kept as they are for
    parity) with the files that shell commands in the summarized part wrote added as modified."""
    read, modified, shell = with_modified(
        plan.read_files, plan.modified_files, shell_written_files(plan.messages_to_summarize, plan.turn_prefix_messages)
    )
    return read, modified, [{"action": "shellFilesAdded", "files": shell}] if shell else []


def add_kept_facts(summary: str, plan: CompactionPlan, gate: list[dict[str, Any]]) -> str:
    """``summary`` with what the user stated and the work showed that it does not hold added (see the
    module's contract; ``gate`` records each kind); values an earlier summary listed carry on."""
    messages = (*plan.messages_to_summarize, *plan.turn_prefix_messages)
    summary, ids = add_missing_ids(summary, user_ids(messages, plan.previous_summary))
    if ids:
        gate.append({"action": "idsAdded", "ids": ids})
    summary, names = add_missing_names(summary, added_names(messages, plan.previous_summary))
    if names:
        gate.append({"action": "namesAdded", "names": names})
    summary, statements = add_missing_statements(
        summary, stated_decisions(messages), stated_next_steps(messages),
        stated_settings(messages, plan.previous_summary))
    gate.extend({"action": kind, "items": items} for kind, items in statements.items())
    summary, run = add_failed_run(summary, *newest_failed_run(messages))
    if run:
        gate.append({"action": "testRunAdded", "items": run})
    return summary


__all__ = ["add_kept_facts", "file_lists_with_shell_writes"]
