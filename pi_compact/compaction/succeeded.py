"""The tool calls of a history whose results say they succeeded (pure).

What a call changed is only taken from a call known to have worked: its result is in the history and is
not an error. A call without its result (cut off, or a branch summary, which leaves results out) counts
as not known to have worked, and adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pi_compact.messages import Message


def succeeded_calls(messages: Iterable[Message], names: frozenset[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(tool name, arguments) of each call to a tool in ``names`` whose result succeeded, oldest first."""
    messages = list(messages)
    succeeded = {
        str(m.get("toolCallId")) for m in messages if m.get("role") == "toolResult" and not m.get("isError")
    }
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for block in message.get("content") or ():
            if not isinstance(block, Mapping) or block.get("type") != "toolCall" or block.get("name") not in names:
                continue
            arguments = block.get("arguments")
            if isinstance(arguments, Mapping) and str(block.get("id")) in succeeded:
                yield str(block.get("name")), arguments


__all__ = ["succeeded_calls"]
