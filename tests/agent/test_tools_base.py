"""run_tool's safety net, argument checks, the default tool set and the toolResult message shape."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_compact.agent.tools import (
    ReadTool,
    ToolContext,
    ToolOutput,
    WriteTool,
    default_tools,
    run_tool,
    tool_result_message,
)
from pi_compact.agent.tools.base import object_schema


class _Exploding:
    name = "boom"
    description = "Always fails."
    parameters = object_schema(required=["n"], n=("integer", "A number."))

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        raise self.exc


def test_run_tool_turns_value_error_into_error_output(tmp_path: Path) -> None:
    out = run_tool(_Exploding(ValueError("bad\nthing")), {"n": 1}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == "boom failed: ValueError: bad thing"


def test_run_tool_turns_os_error_into_one_line_with_filename(tmp_path: Path) -> None:
    exc = PermissionError(13, "Permission denied", "/etc/secret")
    out = run_tool(_Exploding(exc), {"n": 1}, ToolContext(cwd=tmp_path))
    assert out.text == "boom failed: Permission denied: /etc/secret"


def test_run_tool_reports_missing_required_argument(tmp_path: Path) -> None:
    out = run_tool(WriteTool(), {"path": "x.txt"}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == "write is missing the required argument 'content'."
    assert not (tmp_path / "x.txt").exists()


def test_run_tool_reports_wrong_typed_argument(tmp_path: Path) -> None:
    out = run_tool(ReadTool(), {"path": "a.txt", "limit": "many"}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text == "read argument 'limit' must be an integer, got str 'many'."


def test_run_tool_accepts_integral_float_for_integer(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    out = run_tool(ReadTool(), {"path": "a.txt", "offset": 2.0, "limit": 1}, ToolContext(cwd=tmp_path))
    assert out.text.split("\n")[0] == "     2\t2"


def test_write_into_a_file_as_directory_becomes_error_output(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    out = run_tool(WriteTool(), {"path": "plain/child.txt", "content": "x"}, ToolContext(cwd=tmp_path))
    assert out.is_error
    assert out.text.startswith("write failed: ")
    assert "plain" in out.text


def test_default_tools_have_pi_names_and_object_schemas() -> None:
    tools = default_tools()
    assert [tool.name for tool in tools] == ["read", "write", "edit", "bash", "ls", "grep", "find"]
    for tool in tools:
        assert tool.parameters["type"] == "object"
        assert set(tool.parameters["required"]) <= set(tool.parameters["properties"])
        assert all(prop["description"] for prop in tool.parameters["properties"].values())


def test_tool_result_message_has_pi_shape() -> None:
    message = tool_result_message("call_1", "edit", ToolOutput("done", details={"diff": "d"}), 1234)
    assert message == {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "edit",
        "content": [{"type": "text", "text": "done"}],
        "details": {"diff": "d"},
        "isError": False,
        "timestamp": 1234,
    }


def test_tool_result_message_omits_absent_details() -> None:
    message = tool_result_message("c", "bash", ToolOutput("x", is_error=True), 5)
    assert "details" not in message
    assert message["isError"] is True
