"""The built-in tools a model can call, with pi's names and argument names.

``default_tools()`` returns read, write, edit, bash, ls, grep and find; ``session_tools`` adds ``recall``
on the session's history (what a session offers). Run a call through
``run_tool`` (argument check + no exceptions escape) and store its result with ``tool_result_message``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from pi_compact.agent.tools.recall import HistorySource
    from pi_compact.settings import Settings

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
    "session_tools",
    "tool_result_message",
]


def default_tools() -> list[Tool]:
    """A fresh list of every built-in tool, in the order pi lists them."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), LsTool(), GrepTool(), FindTool()]


def session_tools(store: HistorySource, settings: Settings) -> list[Tool]:
    """The tools a session offers the model: the built-in ones and ``recall`` on the session's history.

    Their definitions go in every request, so the terminal and ``compact FILE`` count the same ones."""
    from pi_compact.agent.tools.recall import RecallTool

    return [*default_tools(), RecallTool.for_settings(store, settings.compaction)]
