"""``!cmd`` and ``!!cmd``: the user runs a shell command from the prompt (pi's shell escape).

Contract:
- ``shell_command(text)`` parses the input: ``!cmd`` → (cmd, False), ``!!cmd`` → (cmd, True) for "keep
  it out of the model's context"; None when the line is not a shell escape (or names no command).
- ``run_shell`` runs the command with the agent's ``bash`` tool (same timeout, output tail and process
  group kill on Esc / Ctrl-C), shows its last lines like a bash tool result, and records a pi
  ``bashExecution`` message in the session: the model sees it on the next turn, unless ``!!`` marked it
  ``excludeFromContext`` (it is still in the file, as pi keeps it).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from pi_compact.agent.tools.base import ToolContext
from pi_compact.agent.tools.bash import BashTool
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.ui.state import ReplState
from pi_compact.ui.tool_view import hanging, result_view


def shell_command(text: str) -> tuple[str, bool] | None:
    """(command, exclude from context) for a ``!`` line, else None."""
    stripped = text.strip()
    if not stripped.startswith("!"):
        return None
    exclude = stripped.startswith("!!")
    command = stripped[2:] if exclude else stripped[1:]
    return (command.strip(), exclude) if command.strip() else None


def output_of(text: str) -> str:
    """The command's own output from the bash tool's text (which ends with its ``[...]`` notes)."""
    body = text.rpartition("\n\n")[0] if "\n\n[" in text else text
    return "" if body == "(no output)" else body


def run_shell(state: ReplState, command: str, exclude: bool) -> dict[str, Any]:
    """Run ``command`` (cancellable), show its result and record it; the ``bashExecution`` message."""
    line = Text("$ ", style="bold cyan")
    line.append(command, style="bold")
    state.console.print(line)
    state.renderer.working(f"Running {command.split()[0]}…")

    def work(token: CancelToken) -> Any:
        return BashTool().run({"command": command}, ToolContext(cwd=state.options.cwd, cancel=token))

    output = state.run(work)
    state.renderer.close()
    details = output.details or {}
    view = result_view("bash", {"command": command}, {"content": [{"type": "text", "text": output.text}]},
                       output.is_error)
    state.console.print(hanging(view.shown))
    if view.full is not None:
        state.renderer.last_collapsed = (line, view)
    message: dict[str, Any] = {
        "role": "bashExecution", "command": command, "output": output_of(output.text),
        "exitCode": details.get("exitCode"), "cancelled": details.get("killed") == "cancelled",
        "truncated": bool(details.get("truncated")), "timestamp": now_ms(),
    }
    if exclude:
        message["excludeFromContext"] = True
    state.session.add_message(message)
    if exclude:
        state.say("Not added to the conversation (!!).", "dim")
    state.print_status()  # what the output added to the context, as after a turn
    return message


__all__ = ["output_of", "run_shell", "shell_command"]
