"""What a summary keeps by construction, whatever the model wrote (pure; no model call).

The files that shell commands wrote join pi's file lists; ids the user typed and names the edits added
that the summary does not hold are appended under Critical Context word for word. Each addition is
recorded for ``details.qualityGate`` (``shellFilesAdded``, ``idsAdded``, ``namesAdded``).
"""

from __future__ import annotations

from typing import Any

from pi_compact.compaction.added_names import add_missing_names, added_names
from pi_compact.compaction.fileops import with_modified
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.shell_writes import shell_written_files
from pi_compact.compaction.user_ids import add_missing_ids, user_ids


def file_lists_with_shell_writes(plan: CompactionPlan) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """(read-only files, modified files, gate records): the plan's lists (pi's, kept as they are for
    parity) with the files that shell commands in the summarized part wrote added as modified."""
    read, modified, shell = with_modified(
        plan.read_files, plan.modified_files, shell_written_files(plan.messages_to_summarize, plan.turn_prefix_messages)
    )
    return read, modified, [{"action": "shellFilesAdded", "files": shell}] if shell else []


def add_kept_facts(summary: str, plan: CompactionPlan, gate: list[dict[str, Any]]) -> str:
    """``summary`` with the ids the user typed and the names the edits added that it does not name put
    under Critical Context (``gate`` records them); ids and names an earlier summary listed carry on."""
    messages = (*plan.messages_to_summarize, *plan.turn_prefix_messages)
    summary, ids = add_missing_ids(summary, user_ids(messages, plan.previous_summary))
    if ids:
        gate.append({"action": "idsAdded", "ids": ids})
    summary, names = add_missing_names(summary, added_names(messages, plan.previous_summary))
    if names:
        gate.append({"action": "namesAdded", "names": names})
    return summary


__all__ = ["add_kept_facts", "file_lists_with_shell_writes"]
