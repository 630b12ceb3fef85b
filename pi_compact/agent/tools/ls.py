"""``ls``: list one directory's entries, sorted, directories marked with a trailing ``/``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.truncate import head_count

DEFAULT_LIMIT = 500


class LsTool:
    name = "ls"
    description = (
        "List the entries of a directory (including hidden ones), sorted by name, with a trailing / on "
        f"subdirectories. Returns at most `limit` entries (default {DEFAULT_LIMIT})."
    )
    parameters = object_schema(
        path=("string", "Directory to list (default: the working directory)."),
        limit=("integer", f"Maximum entries to return (default {DEFAULT_LIMIT})."),
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        raw_path: str = args.get("path") or "."
        limit: int = args.get("limit") or DEFAULT_LIMIT
        if limit < 1:
            return error(f"limit must be 1 or more, got {limit}.")
        path = resolve_path(raw_path, ctx.cwd)
        if not path.exists():
            return error(f"Path not found: {raw_path}")
        if not path.is_dir():
            return error(f"Not a directory: {raw_path}; use the read tool for files.")
        entries = sorted(
            (child.name + "/" if child.is_dir() else child.name for child in path.iterdir()),
            key=lambda name: (name.lower(), name),
        )
        if not entries:
            return ToolOutput(f"[{raw_path} is empty.]", details={"entries": 0})
        shown = head_count(entries[:limit])
        body = "\n".join(entries[:shown])
        if shown < len(entries):
            body += f"\n\n[Showing {shown} of {len(entries)} entries. Use limit={len(entries)} to see all.]"
        return ToolOutput(body, details={"entries": len(entries)})
