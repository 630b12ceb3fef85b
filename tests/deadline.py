"""Run a tool call that might hang (on code that lacks the fix) without hanging the test run."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from pi_compact.agent.tools import Tool, ToolContext, ToolOutput, run_tool


def run_within(tool: Tool, args: Mapping[str, Any], ctx: ToolContext, seconds: float = 20.0) -> ToolOutput:
    """``run_tool`` in a daemon thread; fails the test if the call has not returned after ``seconds``."""
    results: list[ToolOutput] = []
    worker = threading.Thread(target=lambda: results.append(run_tool(tool, args, ctx)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert results, f"{tool.name} did not return within {seconds:g} s"
    return results[0]
