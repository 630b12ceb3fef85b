"""``write``: create or overwrite a file with the given text (UTF-8), creating parent directories.

The file is replaced atomically (``atomic_write``): a kill mid-call leaves the old contents or the new,
never a truncated file. Paths that are not regular files (FIFOs, devices) are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.agent.tools.atomic_write import replace_file
from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path
from pi_compact.agent.tools.regular import NotRegularFile


class WriteTool:
    name = "write"
    description = (
        "Write text to a file, replacing its contents if it exists and creating missing parent "
        "directories. Prefer the edit tool for changing part of an existing file."
    )
    parameters = object_schema(
        required=["path", "content"],
        path=("string", "File to write, relative to the working directory or absolute."),
        content=("string", "The complete new contents of the file."),
    )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        raw_path: str = args["path"]
        path = resolve_path(raw_path, ctx.cwd)
        if path.is_dir():
            return error(f"{raw_path} is a directory; give a file path to write.")
        # Bytes, not text mode: the model's newlines are written exactly as given on every platform.
        data = args["content"].encode("utf-8")
        try:
            existed = replace_file(path, data)
        except NotRegularFile as exc:
            return error(f"{raw_path} is {exc.kind}, not a regular file; write only replaces regular files.")
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(f"{verb} {raw_path}: wrote {len(data)} bytes.", details={"bytes": len(data)})
