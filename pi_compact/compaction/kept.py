"""What a summary keeps by construction, whatever the model wrote (pure; no model call).

The files that shell commands wrote join pi's file lists; ids the user typed and names the edits added
that the summary does not hold are appended under Critical Context word for word. Each addition is
recorded for ``details.qualityGate`` (``shellFilesAdded``, ``idsAdded``, ``namesAdded``).
"""

from __future__ import annotations

from typing import Any

from pi_compact.compaction.fileops import with_modified
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.shell_writes import shell_written_files


def file_lists_with_shell_writes(plan: CompactionPlan) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """(read-only files, modified files, gate records): the plan's lists (pi's, kept as they are for
    parity) with the files that shell commands in the summarized part wrote added as modified."""
    read, modified, shell = with_modified(
        plan.read_files, plan.modified_files, shell_written_files(plan.messages_to_summarize, plan.turn_prefix_messages)
    )
    return read, modified, [{"action": "shellFilesAdded", "files": shell}] if shell else []


__all__ = ["file_lists_with_shell_writes"]
