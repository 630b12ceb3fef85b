"""``<read-files>`` / ``<modified-files>``: pi's file lists, with the files shell commands wrote (pure).

The lists are pi's (the read, write and edit tool calls, the previous compaction's lists carried on:
``plan``), kept as pi sorts them. Beyond pi, the files that succeeded shell commands wrote join the
modified ones (``shell_writes``: only commands known to have run and succeeded). A path stands on its
line as it is when it is clean text; one with a control or line-breaking character, a leading quote or
``<``, or padding is quoted (``blocks.quote``), so no path can end the list or start a section.
"""

from __future__ import annotations

from pi_compact.compaction.fileops import with_modified
from pi_compact.compaction.kept.blocks import is_clean, quote
from pi_compact.compaction.kept.shell_writes import shell_written_files
from pi_compact.compaction.plan import CompactionPlan


def file_lists(plan: CompactionPlan) -> tuple[list[str], list[str], list[str]]:
    """(read-only files, modified files, the files shell commands added to the modified ones)."""
    written = shell_written_files(plan.messages_to_summarize, plan.turn_prefix_messages)
    return with_modified(plan.read_files, plan.modified_files, written)


def path_line(path: str) -> str:
    """How ``path`` stands on a line of a file list."""
    return path if is_clean(path) else quote(path)


__all__ = ["file_lists", "path_line"]
