"""What the command line asks for beyond flags: a positional prompt and text piped on stdin.

Contract (pure apart from ``read_piped_stdin``):
- ``split_prompt_words(argv)`` takes the positional words of a start-up command line out of ``argv``
  (``pi-compact "fix the failing test"``) and returns the rest for typer plus those words. A command
  line whose first positional word is a subcommand (``compact``) is returned untouched. Option values
  (``--model X``) are never taken for prompt words.
- ``read_piped_stdin`` returns the text piped in, or None for a terminal or an empty pipe.
- ``plan_start`` decides what a run does: one prompt printed (``-p``, or anything piped in), or the
  interactive terminal with an optional first message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

SUBCOMMANDS = frozenset({"compact", "uncompact"})  # the typer commands (cli.py)
# Options of the main command that take a value: the word after them is that value, not a prompt.
VALUE_OPTIONS = frozenset({
    "--print", "-p", "--mode", "--model", "--api-base", "--api-key", "--context-window", "--session",
    "--extension", "--session-dir", "--approve", "--initial-message", "--compaction-model", "--local-model-path",
})
INITIAL_OPTION = "--initial-message"


def split_prompt_words(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its positional prompt words, and those words (empty when there are none)."""
    rest: list[str] = []
    words: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":  # everything after is prompt text, even words starting with a dash
            words.extend(argv[index:])
            break
        if token.startswith("-") and token != "-":
            rest.append(token)
            if token in VALUE_OPTIONS and index < len(argv):
                rest.append(argv[index])
                index += 1
            continue
        if not words and token in SUBCOMMANDS:
            return argv, []  # a subcommand: typer parses it as before
        words.append(token)
    return rest, words


def read_piped_stdin(stream: TextIO) -> str | None:
    """The text piped into ``stream``; None for a terminal or when nothing (or only blanks) came."""
    try:
        if stream.isatty():
            return None
        text = stream.read()
    except (OSError, ValueError):  # closed or unreadable stdin: nothing was piped
        return None
    return text if text.strip() else None


@dataclass(frozen=True)
class StartPlan:
    """What to run: ``print_prompt`` for one printed answer, else the terminal with ``first_message``."""

    print_prompt: str | None = None
    first_message: str | None = None


def with_context(question: str, piped: str) -> str:
    """The message sent when text was piped in: the question, then the piped text as context."""
    body = piped.rstrip("\n")
    if not question.strip():
        return body
    return f"{question}\n\n<stdin>\n{body}\n</stdin>"


def plan_start(flag_prompt: str | None, words: list[str], piped: str | None) -> StartPlan:
    """Combine ``-p``, positional words and piped text into what the run does."""
    positional = " ".join(words)
    if flag_prompt is not None:
        question = f"{flag_prompt} {positional}".strip() if positional else flag_prompt
        return StartPlan(print_prompt=with_context(question, piped) if piped is not None else question)
    if piped is not None:  # no terminal to talk to: answer once and exit (`echo hi | pi-compact`)
        return StartPlan(print_prompt=with_context(positional, piped))
    return StartPlan(first_message=positional or None)


__all__ = [
    "INITIAL_OPTION", "StartPlan", "plan_start", "read_piped_stdin", "split_prompt_words", "with_context",
]
