"""Every flag of every command, declared once.

The typer commands are built from these tables (``typer_app``) and the hand-written walks over argv
(``argv``: the prompt splitter, the unknown-option check, the fast path of ``compact``) read them, so
a flag is added, renamed or documented here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal["bool", "int", "str", "path", "paths"]


@dataclass(frozen=True)
class Flag:
    """One option: its spellings (long first), the parameter it fills, what it takes, its help."""

    names: tuple[str, ...]
    dest: str
    kind: Kind
    help: str
    metavar: str | None = None
    hidden: bool = False
    default: str | None = None  # only ``--mode`` has a default that is not None/False

    @property
    def takes_value(self) -> bool:
        return self.kind != "bool"


@dataclass(frozen=True)
class Positional:
    """A subcommand's required argument (the session file)."""

    dest: str
    help: str


def _model(help_text: str) -> Flag:
    return Flag(("--model",), "model", "str", help_text)


_API_BASE = Flag(("--api-base",), "api_base", "str", "OpenAI-compatible endpoint URL.")
_API_KEY = Flag(("--api-key",), "api_key", "str", "API key (else the provider's env var).")
INITIAL_OPTION = "--initial-message"  # how main() hands the positional prompt words to typer

MAIN: tuple[Flag, ...] = (
    Flag(("--version",), "version", "bool", "Print the version and exit."),
    Flag(("--print", "-p"), "prompt", "str", "Run one prompt and print the answer."),
    Flag(("--mode",), "mode", "str", "With -p: text (the answer) or json (every event).", metavar="[text|json]",
         default="text"),
    _model("litellm model string, e.g. openai/gpt-4o."),
    _API_BASE,
    _API_KEY,
    Flag(("--context-window",), "context_window", "int", "Override the model's context window."),
    Flag(("--max-turns",), "max_turns", "int", "Stop a prompt's tool loop after N model replies (else the maxTurns "
         "setting; by default 50 with -p, no limit in the terminal)."),
    Flag(("--session",), "session", "path", "Open or create this session file."),
    Flag(("--continue", "-c"), "continue_recent", "bool", "Continue the newest session here."),
    Flag(("--resume", "-r"), "resume", "bool", "Pick a session of this project to continue."),
    Flag(("--no-session",), "no_session", "bool", "Keep the session in memory only."),
    Flag(("--no-auto-compact",), "no_auto_compact", "bool", "No automatic compaction (threshold or overflow)."),
    Flag(("--extension",), "extension", "paths", "Load this extension file (repeatable).", metavar="FILE"),
    Flag(("--session-dir",), "session_dir", "str", "Directory for new session files."),
    Flag(("--approve",), "approve", "str", "Ask before write/edit (edits) or also bash (all); default none, or the "
         "approve setting.", metavar="[none|edits|all]"),
    Flag(("--compaction-model",), "compaction_model", "str", "litellm model string that writes compaction "
         "summaries (else compaction.model, else the chat model)."),
    Flag(("--local-model-path",), "local_model_path", "path", "A GGUF model file for --model local (else the "
         "bundled one).", metavar="FILE"),
    Flag(("--trust-project",), "trust_project", "bool", "Apply this directory's .pi settings that can send data "
         "elsewhere or run code, without asking."),
    Flag((INITIAL_OPTION,), "initial_message", "str", "", hidden=True),
    Flag(("--thinking",), "thinking", "str", "Thinking level (else the session's, else defaultThinkingLevel, else "
         "medium; clamped to what the model can do).", metavar="[off|minimal|low|medium|high|xhigh]"),
)

COMPACT_SESSION = Positional("session", "The session file (.jsonl) to compact.")
COMPACT: tuple[Flag, ...] = (
    Flag(("--dry-run",), "dry_run", "bool", "Only show what would happen."),
    Flag(("--json",), "as_json", "bool", "With --dry-run: print the plan as JSON."),
    Flag(("--keep-recent-tokens",), "keep_recent_tokens", "int", "Tokens of recent messages to keep."),
    Flag(("--reserve-tokens",), "reserve_tokens", "int", "Headroom below the window."),
    Flag(("--context-window",), "context_window", "int", "The model's context window."),
    Flag(("--token-estimator",), "token_estimator", "str", "chars4 (pi's) or auto (CJK-aware)."),
    Flag(("--instructions",), "instructions", "str", "Extra focus for the summary."),
    _model("litellm model string."),
    _API_BASE,
    _API_KEY,
    Flag(("--compaction-model",), "compaction_model", "str", "litellm model string that writes the summary "
         "(else compaction.model, else --model)."),
    Flag(("--no-fallback",), "no_fallback", "bool", "If the model fails, write nothing (exit 1) instead of a "
         "model-free summary (exit 3)."),
)

UNCOMPACT_SESSION = Positional("session", "The session file (.jsonl).")
UNCOMPACT: tuple[Flag, ...] = (
    Flag(("--force",), "force", "bool", "Restore even if it no longer fits the window or drops messages written "
         "after the compaction."),
    Flag(("--context-window",), "context_window", "int", "The model's context window."),
    _model("litellm model string (its window is used)."),
)

SUBCOMMANDS: Mapping[str, tuple[Flag, ...]] = {"compact": COMPACT, "uncompact": UNCOMPACT}
HELP_OPTIONS = ("--help", "-h")

OptionTable = Mapping[str, Mapping[str, bool]]


def option_table() -> dict[str, dict[str, bool]]:
    """Each command's spellings ("" for the main command), mapped to whether the option takes a value."""

    def spellings(flags: tuple[Flag, ...]) -> dict[str, bool]:
        table = dict.fromkeys(HELP_OPTIONS, False)
        table.update({name: flag.takes_value for flag in flags for name in flag.names})
        return table

    return {"": spellings(MAIN), **{name: spellings(flags) for name, flags in SUBCOMMANDS.items()}}


def value_options(flags: tuple[Flag, ...]) -> frozenset[str]:
    """The spellings of the options in ``flags`` that take the next word as their value."""
    return frozenset(name for flag in flags if flag.takes_value for name in flag.names)
