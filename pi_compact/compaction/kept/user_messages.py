"""``<user-messages>``: what the user typed, word for word, newest first (pure).

A summary, a small model's most of all, keeps that a decision was made and drops why, forgets the value
the user asked for, or the step the user agreed to. Picking such sentences out by their wording only
finds the wordings someone thought of, so the user's own messages are kept whole instead, as Codex
keeps them across its compactions: the newest first, as many as fit a budget that grows with the
context window (``budget_tokens``), across compactions (the previous summary's come after the new
ones). Only what the user typed counts:

- a ``user`` message only (not the assistant, a tool's output, a ``!cmd`` run, an extension's message or a
  summary);
- without the files attached to it with ``@`` (``<file path="...">`` / pi's ``<file name="...">`` blocks:
  a file's text is not the user's words; the ``@path`` mention itself stays);
- a pasted block (a code fence, ``>`` quoted lines) longer than ``PASTED_LINES`` lines keeps its first lines
  and says how many it left out; a message longer than ``MESSAGE_TOKENS`` keeps its start.

Each message is one quoted item (``blocks.quote``): data, never an instruction, and unable to end the
block or add a section, whatever it holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.messages import Message, text_of

PASTED_LINES = 6  # of one code fence or quoted block
MESSAGE_TOKENS = 400  # of one message
MIN_PART_TOKENS = 40  # a message cut shorter than this to fit the budget is left out instead
# A path may itself hold a quote: the opening tag ends at the last ``">`` of its line.
_ATTACHMENT = re.compile(r'\n*<file (?:path|name)="[^\n]*">\n.*?(?:\n</file>|\Z)', re.DOTALL)
_FENCE = re.compile(r"^(\s*)(```|~~~)[^\n]*\n.*?(?:^\s*\2\s*$|\Z)", re.DOTALL | re.MULTILINE)
_QUOTED_RUN = re.compile(rf"(?:^[ \t]*>[^\n]*(?:\n|\Z)){{{PASTED_LINES + 1},}}", re.MULTILINE)


def _shortened(block: str) -> str:
    lines = block.rstrip("\n").split("\n")
    if len(lines) <= PASTED_LINES + 1:
        return block
    return "\n".join([*lines[:PASTED_LINES], f"[… {len(lines) - PASTED_LINES} more pasted lines left out]"]) + "\n"


def _cut(text: str, tokens: int) -> str:
    """``text``'s start that fits ``tokens``, with how much was left out."""
    if estimate_text_tokens(text) <= tokens:
        return text
    size = tokens * 4
    while size > 0 and estimate_text_tokens(text[:size]) > tokens - 8:
        size = size * 7 // 8
    return text[:size].rstrip() + f" [… {len(text) - size} more characters left out]"


def typed_text(message: Message) -> str:
    """What the user typed in ``message`` (see the module's contract); '' for any other message."""
    if message.get("role") != "user":
        return ""
    text = _ATTACHMENT.sub("", text_of(message.get("content")))
    text = _FENCE.sub(lambda m: _shortened(m.group(0)), text)
    text = _QUOTED_RUN.sub(lambda m: _shortened(m.group(0)), text)
    return text.strip()


def budget_tokens(window: int) -> int:
    """The tokens the block may take: 4 % of the context window, at least 300 and at most 20,000 (Codex's
    cap for the user messages it carries). The embedded model's 16k window gets 655."""
    return max(300, min(20_000, window * 4 // 100)) if window > 0 else 300


def user_messages(messages: Iterable[Message], previous: Sequence[str], budget: int) -> list[str]:
    """The user's typed messages of ``messages`` newest first, then ``previous`` (the last summary's,
    newest first), each once (its newest time), as many as fit ``budget`` tokens; the one that crosses
    the budget keeps its start when that is worth keeping."""
    typed = [_cut(text, MESSAGE_TOKENS) for text in map(typed_text, messages) if text]
    kept: list[str] = []
    spent = 0
    for text in [*reversed(typed), *previous]:
        if text in kept:
            continue
        cost = estimate_text_tokens(text) + 2  # the quotes and the line
        if spent + cost > budget:
            room = budget - spent - 2
            if room >= MIN_PART_TOKENS:
                kept.append(_cut(text, room))
            break
        kept.append(text)
        spent += cost
    return kept


__all__ = ["budget_tokens", "typed_text", "user_messages"]
