"""``write``: create or overwrite a file with the given text (UTF-8), creating parent directories."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.agent.tools.base import ToolContext, ToolOutput, error, object_schema, resolve_path


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
        data = args["content"].encode("utf-8")
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Bytes, not write_text: the model's newlines are written exactly as given on every platform.
        path.write_bytes(data)
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(f"{verb} {raw_path}: wrote {len(data)} bytes.", details={"bytes": len(data)})
