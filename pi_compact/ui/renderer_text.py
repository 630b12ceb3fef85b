"""Tool text made safe for the terminal: control sequences stripped (``shown_text.clean``), the key argument of
a call.

Pure helpers shared by the renderer and ``ui.tool_view`` (kept apart so neither imports the other's
module for them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.shown_text import clean

KEY_ARGUMENTS = ("path", "file_path", "command", "pattern", "query", "url")


def key_argument(args: Mapping[str, Any]) -> str:
    """The argument that says what a tool call does: its path, command or pattern (else the first string)."""
    value = next((args[k] for k in KEY_ARGUMENTS if isinstance(args.get(k), str)), None)
    if value is None:
        value = next((v for v in args.values() if isinstance(v, str)), "")
    lines = clean(str(value)).strip().splitlines()
    first = lines[0] if lines else ""
    return first + (" …" if len(lines) > 1 else "")


def result_text(result: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for block in result.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, Mapping) and block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return clean("\n".join(parts))


__all__ = ["KEY_ARGUMENTS", "clean", "key_argument", "result_text"]
