"""The table of what a summary keeps by construction, and the one place it is applied (pure).

Each row is one kind: the tag of its block, its key in the compaction entry's ``details``, how its items
are found (from the summarized messages, the previous compaction's items and the window) and how an item
stands on a line. ``keep`` finds every kind's items once per compaction; ``with_blocks`` appends them to
the summary after the model's prose (or the model-free summary), each kind as one block, in the table's
order; pi's file lists come last, as pi writes them. A new kind is one row here and one module.

The model's sections are never touched: "model only" is the summary without its blocks
(``without_blocks``). Blocks a model copied into its answer (from the previous summary it was shown)
are removed from it before ours are added, so a block is never doubled and never read back as ours.
The items carry on through ``details`` (``details.kept`` for ours, ``readFiles``/``modifiedFiles`` for
pi's), never by reading the previous summary's text: only our own records are read back as the user's
words or the work's outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pi_compact.compaction.kept.blocks import clean, format_block, quote, strip_blocks
from pi_compact.compaction.kept.files import file_lists, path_line
from pi_compact.compaction.kept.outcomes import tool_outcomes
from pi_compact.compaction.kept.user_messages import budget_tokens, user_messages
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.tokens import estimate_text_tokens, estimate_tokens_auto

OUTCOME_SHARE = 2 / 100  # of the window for ``<tool-outcomes>``: 327 tokens of the embedded model's 16k
OUTCOME_TOKENS = (150, 3_000)  # about 8 lines on 16k, 60 on 128k and more: older outcomes matter less
# Of what a compaction replaces (the summarized messages and the previous summary), the most each block may
# take, so the summary can still be smaller than what it replaces: a compaction of little more than the
# user's own words would otherwise gain nothing. Real compactions replace far more than the window shares.
USER_SHARE_OF_REPLACED = 1 / 3
OUTCOME_SHARE_OF_REPLACED = 1 / 6
_PREVIOUS_ITEMS = 200  # read back from a previous entry's details, at most (a hand-edited file may hold more)
_PREVIOUS_CHARS = 8_000  # of one item read back
_ONCE_CHARS = 40  # a shorter item ("yes, go on") found in the prose proves nothing was kept there


@dataclass(frozen=True)
class Source:
    """What every kind reads: the plan (the summarized messages, pi's file lists, the previous
    compaction's ``details.kept``) and the context window the budgets scale with."""

    plan: CompactionPlan
    window: int

    @property
    def messages(self) -> tuple[Any, ...]:
        return (*self.plan.messages_to_summarize, *self.plan.turn_prefix_messages)

    def previous(self, key: str) -> list[str]:
        """The previous compaction's items of ``key``, newest first (only strings; bounded)."""
        values = self.plan.previous_kept.get(key) if isinstance(self.plan.previous_kept, Mapping) else None
        if not isinstance(values, list):
            return []
        return [v[:_PREVIOUS_CHARS] for v in values[:_PREVIOUS_ITEMS] if isinstance(v, str) and v]

    @cached_property
    def files(self) -> tuple[list[str], list[str], list[str]]:
        return file_lists(self.plan)

    @cached_property
    def replaced(self) -> int:
        """The tokens the compaction replaces: the summarized messages and the previous summary."""
        return sum(map(estimate_tokens_auto, self.messages)) + estimate_text_tokens(self.plan.previous_summary or "")

    def budget(self, of_window: int, share_of_replaced: float) -> int:
        """A block's tokens: its share of the window, at most its share of what is replaced."""
        return min(of_window, int(self.replaced * share_of_replaced))


def _outcome_budget(window: int) -> int:
    low, high = OUTCOME_TOKENS
    return max(low, min(high, int(window * OUTCOME_SHARE))) if window > 0 else low


@dataclass(frozen=True)
class Kind:
    """One row: a block's tag, its ``details`` key, how its items are found, how an item is written."""

    tag: str
    key: str
    items: Callable[[Source], list[str]] = field(repr=False)
    line: Callable[[str], str] = field(repr=False)
    pi_key: bool = False  # the key is pi's own, at the top of ``details`` (else under ``details.kept``)
    # An item the summary's text already holds word for word (a short turn start kept verbatim, a message
    # the model copied) is not written a second time; ``details`` still carries it on.
    once: bool = False


KINDS: tuple[Kind, ...] = (
    Kind("user-messages", "userMessages",
         lambda s: user_messages(s.messages, s.previous("userMessages"),
                                 s.budget(budget_tokens(s.window), USER_SHARE_OF_REPLACED)), quote, once=True),
    Kind("tool-outcomes", "toolOutcomes",
         lambda s: tool_outcomes(s.messages, s.previous("toolOutcomes"),
                                 s.budget(_outcome_budget(s.window), OUTCOME_SHARE_OF_REPLACED)), clean),
    Kind("read-files", "readFiles", lambda s: s.files[0], path_line, pi_key=True),
    Kind("modified-files", "modifiedFiles", lambda s: s.files[1], path_line, pi_key=True),
)
TAGS = tuple(kind.tag for kind in KINDS)
OWN_TAGS = tuple(kind.tag for kind in KINDS if not kind.pi_key)  # the blocks pi does not write


@dataclass(frozen=True)
class Kept:
    """Every kind's items for one compaction (by ``details`` key), and the files shell commands added."""

    items: Mapping[str, list[str]] = field(hash=False)
    shell_files: tuple[str, ...] = ()

    @property
    def read_files(self) -> list[str]:
        return list(self.items.get("readFiles", []))

    @property
    def modified_files(self) -> list[str]:
        return list(self.items.get("modifiedFiles", []))

    def details(self) -> dict[str, Any]:
        """The entry's ``details`` for these items: pi's file lists, ours under ``kept`` (kinds with items)."""
        ours = {k.key: list(self.items[k.key]) for k in KINDS if not k.pi_key and self.items.get(k.key)}
        found: dict[str, Any] = {k.key: list(self.items.get(k.key, [])) for k in KINDS if k.pi_key}
        return {**found, **({"kept": ours} if ours else {})}


def keep(plan: CompactionPlan, window: int) -> Kept:
    """Every kind's items for a compaction of ``plan`` with a context window of ``window`` tokens."""
    source = Source(plan, window)
    return Kept({kind.key: kind.items(source) for kind in KINDS}, tuple(source.files[2]))


def without_blocks(summary: str) -> str:
    """``summary`` without any of the table's blocks: the model's prose alone."""
    return strip_blocks(summary, TAGS)


def for_model(summary: str) -> str:
    """A previous summary as the summarizer is shown it: without our blocks, whose items the code carries
    on itself (a block shown is a block the model may copy, and tokens it reads again); pi's file lists
    stay, as pi shows them."""
    return strip_blocks(summary, OWN_TAGS)


def with_blocks(body: str, kept: Kept) -> str:
    """``body`` (the model's answer, or the model-free summary) without any block it holds of ours, then
    each kind's block, in the table's order (none for a kind without items)."""
    body = without_blocks(body)
    blocks = []
    for kind in KINDS:
        lines = [kind.line(item) for item in kept.items.get(kind.key, [])
                 if not (kind.once and len(item) >= _ONCE_CHARS and item in body)]
        if lines:
            blocks.append(format_block(kind.tag, lines))
    return body + "\n\n" + "\n\n".join(blocks) if blocks else body


__all__ = ["KINDS", "OWN_TAGS", "TAGS", "Kept", "Kind", "Source", "for_model", "keep", "with_blocks", "without_blocks"]
