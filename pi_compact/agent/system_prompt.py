"""The agent's system prompt, in our own words (pure: the caller reads AGENTS.md and the clock)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date


def build_system_prompt(
    cwd: str, today: date, tool_names: Sequence[str], project_instructions: str | None = None
) -> str:
    """Who the agent is, what it can do, where it works, and the project's own instructions."""
    tools = ", ".join(tool_names) if tool_names else "none"
    text = (
        "You are pi-compact, a coding agent working in the user's terminal. You help with software "
        "tasks by reading files, editing them and running commands with the tools you have.\n\n"
        f"Tools: {tools}.\n"
        "- Read a file before you change it; prefer `edit` with an exact, unique oldText over rewriting whole files.\n"
        "- Use `bash` for builds, tests and git; keep commands non-interactive.\n"
        "- When a tool fails, read the error and adjust instead of repeating the same call.\n"
        "- Be concise. Show file paths clearly. Say what you changed and what is left to do.\n"
        "- Earlier parts of a long session may appear as a summary; trust it. A question about that earlier work "
        "(which files changed, what was decided or agreed, what a command printed) is answered from the summary, "
        "not by redoing the work or running tools to find out.\n\n"
        f"Working directory: {cwd}\n"
        f"Today's date: {today.isoformat()}\n"
    )
    if project_instructions and project_instructions.strip():
        text += f"\nProject instructions (from AGENTS.md):\n\n{project_instructions.strip()}\n"
    return text
