"""``@path`` mentions in the REPL: Tab completes file paths, sending attaches the files' text.

Contract:
- ``MentionCompleter(cwd)`` completes the word before the cursor when it starts with ``@``: entries of
  the named directory (relative to ``cwd``; ``~`` and absolute paths work too) whose names start with
  what is typed, directories with a trailing ``/``; dot-files only once a ``.`` is typed.
- ``attach_mentions(text, cwd)`` returns ``text`` followed by one ``<file path="...">`` block per distinct
  ``@path`` (at the start of the text or after whitespace) that names an existing regular text file,
  bounded like the read tool (``MAX_LINES`` lines / ``MAX_BYTES`` bytes, long lines cut) with a note
  when cut. A missing path, a directory or a binary file is left as plain text. The message keeps the
  ``@path`` words, so the model sees both the mention and the content. ``attach_with_notes`` also says,
  per mention, what was attached (name, size) or why nothing was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_MAX_COMPLETIONS = 100
# The read tool's budget (agent.tools.truncate, imported on send only: the prompt must draw before the
# tools load) is 50 KB; reading four times that is enough even after long lines are cut.
_READ_BYTES = 4 * 50 * 1024
_TRAILING = ".,;:!?)]}'\""  # punctuation that ends a sentence, not a path ("look at @a.py.")


def _resolve(cwd: Path, typed: str) -> Path:
    path = Path(os.path.expanduser(typed))
    return path if path.is_absolute() else cwd / path


class MentionCompleter(Completer):
    """Completes ``@path`` words with the files and directories they can name."""

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        word = re.split(r"\s", before)[-1]
        if not word.startswith("@"):
            return
        typed = word[1:]
        folder, _, prefix = typed.rpartition("/")
        directory = _resolve(self._cwd, folder + "/" if folder else ".")
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        shown = 0
        for entry in entries:
            if not entry.name.startswith(prefix) or (entry.name.startswith(".") and not prefix.startswith(".")):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            name = entry.name + ("/" if is_dir else "")
            yield Completion(name, start_position=-len(prefix), display=name)
            shown += 1
            if shown == _MAX_COMPLETIONS:
                return


def _file_block(shown_path: str, path: Path) -> str | None:
    """The ``<file>`` block for ``path``, or None when it is not a regular text file."""
    from pi_compact.agent.tools.truncate import MAX_BYTES, MAX_LINES, cut_line, head_count

    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
        with path.open("rb") as handle:
            data = handle.read(_READ_BYTES)
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # binary: the model cannot use it as text
    lines = [cut_line(line) for line in data.decode("utf-8", errors="replace").splitlines()]
    if len(data) < size and lines:
        lines.pop()  # the last line read may be cut in the middle
    shown = head_count(lines, MAX_LINES, MAX_BYTES)
    body = "\n".join(lines[:shown])
    if shown < len(lines) or len(data) < size:
        body += f"\n[Only the first {shown} lines are attached; use the read tool for the rest.]"
    return f'<file path="{shown_path}">\n{body}\n</file>'


def attach_mentions(text: str, cwd: Path) -> str:
    """``text`` plus the content of every ``@path`` in it that names a regular text file."""
    return attach_with_notes(text, cwd)[0]


def attach_with_notes(text: str, cwd: Path) -> tuple[str, list[tuple[str, bool]]]:
    """``attach_mentions``, and one note per mention for the user: (what was attached, with its name and
    size; or why a mention was sent as plain text, True for that warning)."""
    blocks: list[str] = []
    notes: list[tuple[str, bool]] = []
    seen: set[Path] = set()
    for match in _MENTION.finditer(text):
        typed = match.group(1).rstrip(_TRAILING)
        path = _resolve(cwd, typed)
        if not typed or path in seen:
            continue
        seen.add(path)
        block = _file_block(typed, path)
        if block is not None:
            blocks.append(block)
            notes.append((_attached(typed, path, block), False))
        else:
            why = "is a directory" if path.is_dir() else "is not a text file" if path.exists() else "does not exist"
            notes.append((f"@{typed} {why}: sent as plain text, nothing attached.", True))
    return ("\n\n".join([text, *blocks]) if blocks else text), notes


def attach_and_say(text: str, cwd: Path, say: Callable[[str, str], None]) -> str:
    """The message to send for what the user typed, after saying what each ``@path`` attached (or why not)."""
    message, notes = attach_with_notes(text, cwd)
    for note, warning in notes:
        say(note, "yellow" if warning else "dim")
    return message


def _attached(typed: str, path: Path, block: str) -> str:
    try:
        size = f"{path.stat().st_size:,} bytes"
    except OSError:
        size = "size unknown"
    lines = block.count("\n") - 1
    cut = " (the first lines only)" if "[Only the first " in block else ""
    return f"Attached {typed}: {size}, {lines:,} line{'' if lines == 1 else 's'}{cut}."
