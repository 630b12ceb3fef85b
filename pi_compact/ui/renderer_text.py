"""Tool text made safe for the terminal: control sequences stripped, the key argument of a call.

Pure helpers shared by the renderer and ``ui.tool_view`` (kept apart so neither imports the other's
module for them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pi_compact.jstext import valid_text

KEY_ARGUMENTS = ("path", "file_path", "command", "pattern", "query", "url")
# Escape sequences, C0 and C1 controls (C1 ``\x9b`` is a CSI on some terminals), and the bidirectional
# overrides and isolates that can make a shown command or path read differently from what runs.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
                      "|[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Text safe to put on a terminal: escape sequences, control and bidi characters removed (tabs and
    newlines kept)."""
    return valid_text(_CONTROL.sub("", text.replace("\r\n", "\n")))  # a lone surrogate cannot be printed


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
