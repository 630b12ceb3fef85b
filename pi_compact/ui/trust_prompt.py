"""The project trust question, asked once on the terminal before the REPL starts (``settings.trust``).

Contract: ``policy(flag, interactive)`` is the ``TrustPolicy`` for a run: it asks only when the run is
interactive and both stdin and stdout are a terminal; print mode and piped runs never ask (the risky
keys are then ignored with one line). ``ask`` shows what the project file wants (control characters
removed), every value whole: a long one is wrapped onto indented lines, never cut, because what is
trusted is the whole value (``settings.trust``). It reads one answer, typed after the question is drawn
(what was typed before is discarded), as a whole line: ``t`` trust (remembered), ``o`` trust this time,
``i`` ignore its risky settings (remembered). End of input or Ctrl-C ignores them this time.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TextIO

from pi_compact.settings.trust import Answer, Claim, TrustPolicy
from pi_compact.ui.renderer_text import clean

_ANSWERS: dict[str, Answer] = {"t": "trust", "o": "once", "i": "ignore", "trust": "trust", "once": "once",
                               "ignore": "ignore"}  # a whole line: "tell me…" typed ahead is no answer
QUESTION = "Trust this directory? t trust (remembered) · o trust this time · i ignore these settings (remembered): "


def ask(
    cwd: Path, claims: tuple[Claim, ...], stdin: TextIO | None = None, out: TextIO | None = None,
    width: int | None = None,
) -> Answer:
    """Show the project's risky settings (wrapped to ``width``, default the terminal's) and read the answer."""
    reader, writer = stdin or sys.stdin, out or sys.stdout
    writer.write(f"{clean(str(cwd))}/.pi wants settings that can send your API keys and conversation to another "
                 "server or run code:\n")
    columns = width or shutil.get_terminal_size((100, 24)).columns
    for claim in claims:
        writer.write("".join(line + "\n" for line in claim_lines(claim, columns)))
    for _attempt in range(5):
        writer.write(QUESTION)
        writer.flush()
        _discard_pending(reader)  # what was typed before the question was on screen does not answer it
        try:
            line = reader.readline()
        except KeyboardInterrupt:
            line = ""
        if not line:
            writer.write("\n")
            return _ignored_once(writer)
        choice = line.strip().lower()
        if choice in _ANSWERS:
            return _ANSWERS[choice]
    return _ignored_once(writer)


def _discard_pending(reader: TextIO) -> None:
    # Keys typed but not read yet (the terminal's input queue) were typed before the question was drawn.
    try:
        import termios

        if reader.isatty():
            termios.tcflush(reader.fileno(), termios.TCIFLUSH)
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # not a terminal


def _ignored_once(writer: TextIO) -> Answer:
    # Nobody answered: ignore the risky settings for this run, remember nothing.
    writer.write("No answer: the project's risky settings are ignored this time.\n")
    return "skip"


def claim_lines(claim: Claim, width: int) -> list[str]:
    """One claim as lines of at most ``width - 1`` characters: ``  key: value``, continued on lines indented
    by four spaces. Every character of the value is on screen, in order; nothing is cut or dropped."""
    text = f"{clean(claim.key)}: {clean(claim.shown)}".replace("\n", " ")
    first, rest = max(width - 3, 16), max(width - 5, 16)
    lines = [f"  {text[:first]}"]
    lines.extend(f"    {text[start:start + rest]}" for start in range(first, len(text), rest))
    return lines


def policy(flag: bool, interactive: bool) -> TrustPolicy:
    """The trust policy of a run: ``--trust-project``, and the question only where someone can answer."""
    can_ask = interactive and sys.stdin.isatty() and sys.stdout.isatty()
    return TrustPolicy(flag=flag, ask=ask if can_ask else None)


__all__ = ["QUESTION", "ask", "claim_lines", "policy"]
