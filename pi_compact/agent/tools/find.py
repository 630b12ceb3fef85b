"""``find``: list files and directories whose relative path matches a glob, sorted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.truncate import head_count
from pi_compact.agent.tools.walk import SKIPPED_DIRS, compile_glob, relative, walk

DEFAULT_LIMIT = 1000


class FindTool:
    name = "find"
    description = (
        "Find files by glob pattern, e.g. `*.py` (any depth), `src/**/*.ts` or `**/test_*.py`. Returns "
        "matching paths relative to the searched directory, sorted, directories ending in /. Skips "
        f"{', '.join(sorted(SKIPPED_DIRS))}."
    )
    parameters = object_schema(
        required=["pattern"],
        pattern=("string", "Glob matched against paths relative to `path`."),
        path=("string", "Directory to search (default: the working directory)."),
        limit=("integer", f"Maximum results (default {DEFAULT_LIMIT})."),
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern: str = args["pattern"]
        raw_path: str = args.get("path") or "."
        limit: int = args.get("limit") or DEFAULT_LIMIT
        if limit < 1:
            return error(f"limit must be 1 or more, got {limit}.")
        root = resolve_path(raw_path, ctx.cwd)
        if not root.is_dir():
            return error(f"Not a directory: {raw_path}" if root.exists() else f"Path not found: {raw_path}")
        matcher = compile_glob(pattern.removeprefix("./"))
        matches: list[str] = []
        more = False
        for path, is_dir in walk(root, ctx.cancel):
            rel = relative(path, root)
            if matcher.match(rel):
                if len(matches) == limit:
                    more = True
                    break
                matches.append(rel + "/" if is_dir else rel)
        if ctx.cancelled:
            return error(f"Cancelled while searching {raw_path}.")
        if not matches:
            return ToolOutput(f"No files matching {pattern!r} in {raw_path}.", details={"matches": 0})
        shown = head_count(matches)
        body = "\n".join(matches[:shown])
        if more or shown < len(matches):
            body += (
                f"\n\n[Showing the first {shown} matches; there are more. Use a narrower pattern or path, "
                f"or a larger limit.]"
            )
        return ToolOutput(body, details={"matches": len(matches), "truncated": more or shown < len(matches)})
