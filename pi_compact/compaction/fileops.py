"""Which files a conversation read and modified, carried from one compaction to the next (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_compact.messages import Message

_FILE_TOOLS = frozenset({"read", "write", "edit"})


def file_tool_calls(message: Message) -> Iterator[tuple[str, str]]:
    """(tool name, path) of each read / write / edit tool call of an assistant message."""
    if message.get("role") != "assistant":
        return
    for block in message.get("content") or ():
        # dict first in these checks: parsed JSON is made of dicts, and the ABC check is slow.
        if not isinstance(block, (dict, Mapping)) or block.get("type") != "toolCall":
            continue
        arguments = block.get("arguments")
        path = arguments.get("path") if isinstance(arguments, (dict, Mapping)) else None
        name = str(block.get("name"))
        if isinstance(path, str) and name in _FILE_TOOLS:
            yield name, path


@dataclass
class FileOps:
    """Paths seen in read / write / edit tool calls (mutable while collecting)."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)

    def add_from(self, message: Message) -> None:
        """Record the file paths of an assistant message's read/write/edit tool calls."""
        if message.get("role") != "assistant":  # most messages: decided before any set-up
            return
        targets = {"read": self.read, "write": self.written, "edit": self.edited}
        for name, path in file_tool_calls(message):
            targets[name].add(path)

    def seed(self, details: Any) -> None:
        """Start from the lists a previous (pi-generated) compaction recorded."""
        if not isinstance(details, Mapping):
            return
        read, modified = details.get("readFiles"), details.get("modifiedFiles")
        if isinstance(read, list):
            self.read.update(p for p in read if isinstance(p, str))
        if isinstance(modified, list):
            self.edited.update(p for p in modified if isinstance(p, str))


def _utf16_key(path: str) -> bytes:
    # JavaScript sorts strings by UTF-16 code units; big-endian UTF-16 bytes compare the same way.
    return path.encode("utf-16-be", "surrogatepass")


def file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """(read-only files, modified files), each sorted as JavaScript sorts strings."""
    modified = ops.edited | ops.written
    read_only = ops.read - modified
    return sorted(read_only, key=_utf16_key), sorted(modified, key=_utf16_key)


def with_modified(
    read_files: Iterable[str], modified_files: Iterable[str], more: Iterable[str]
) -> tuple[list[str], list[str], list[str]]:
    """The lists with ``more`` modified files added (out of the read-only list), sorted as ``file_lists``
    sorts; also those of ``more`` that were not listed as modified yet."""
    modified = set(modified_files)
    added = sorted(set(more) - modified, key=_utf16_key)
    modified.update(added)
    read_only = sorted(set(read_files) - modified, key=_utf16_key)
    return read_only, sorted(modified, key=_utf16_key), added


def format_file_lists(read_files: Iterable[str], modified_files: Iterable[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` block appended to a summary ('' when both empty)."""
    sections = []
    read, modified = list(read_files), list(modified_files)
    if read:
        sections.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


# A block as ``format_file_lists`` writes it (one path per line), with the blank line before it.
_FILE_LIST_BLOCK = re.compile(r"\n*<(read-files|modified-files)>\n(?:.*\n)*?</\1>(?=\n|$)")


def strip_file_lists(summary: str) -> str:
    """``summary`` without its ``<read-files>`` / ``<modified-files>`` blocks.

    For a summary kept verbatim inside a new one: the new summary gets the current lists, which
    already hold the old ones, so keeping the old blocks would list the files twice.
    """
    return _FILE_LIST_BLOCK.sub("", summary)
