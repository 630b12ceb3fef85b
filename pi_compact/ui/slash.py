"""Older import path of the slash commands, now the ``pi_compact.ui.commands`` package; same objects."""

from __future__ import annotations

from pi_compact.ui.commands import BY_NAME, COMMANDS, KEYS_HELP, argument_options, dispatch, is_command
from pi_compact.ui.commands.config import model_names
from pi_compact.ui.state import Command, Outcome, ReplState, Runner, Runtimes

__all__ = [
    "BY_NAME",
    "COMMANDS",
    "KEYS_HELP",
    "Command",
    "Outcome",
    "ReplState",
    "Runner",
    "Runtimes",
    "argument_options",
    "dispatch",
    "is_command",
    "model_names",
]
