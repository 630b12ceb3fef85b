"""The built-in tools a model can call, with pi's names and argument names.

``default_tools()`` returns read, write, edit, bash, ls, grep and find. Run a call through
``run_tool`` (argument check + no exceptions escape) and store its result with ``tool_result_message``.
"""

from __future__ import annotations

from pi_compact.agent.tools.base import (
    Tool,
    ToolContext,
    ToolOutput,
    describe_exception,
    precheck,
    resolve_path,
    run_tool,
    tool_result_message,
)
from pi_compact.agent.tools.bash import BashTool
from pi_compact.agent.tools.edit import EditTool
from pi_compact.agent.tools.find import FindTool
from pi_compact.agent.tools.grep import GrepTool
from pi_compact.agent.tools.ls import LsTool
from pi_compact.agent.tools.read import ReadTool
from pi_compact.agent.tools.write import WriteTool

__all__ = [
    "BashTool",
    "EditTool",
    "FindTool",
    "GrepTool",
    "LsTool",
    "ReadTool",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "WriteTool",
    "default_tools",
    "describe_exception",
    "precheck",
    "resolve_path",
    "run_tool",
    "tool_result_message",
]


def default_tools() -> list[Tool]:
    """A fresh list of every built-in tool, in the order pi lists them."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), LsTool(), GrepTool(), FindTool()]
