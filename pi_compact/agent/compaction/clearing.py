"""One session's cleared tool results: what the request carries instead of them, and when to clear more.

The rules and the stubs are ``compaction.clearing``'s (pure); this keeps the state of one session's
current branch and writes a step's record. ``ToolClearing``:
- ``reload(store, live)`` reads the cleared set back from the branch's records (a resumed session, a tree
  move and a compaction rebuild it; results a compaction dropped simply no longer match), those cleared
  after the newest measured reply still counted as unsent;
- ``sent(messages)`` is the context as the request carries it (stubs for the cleared results);
  ``carried(messages)`` whether it carries any;
- ``step`` clears more when the context as sent is past the compaction threshold (the soft one with
  ``compaction.background``; the model's answer room left, as for compaction) and a step frees at least
  ``minClearTokens``: it records the step as a ``custom`` entry first, so the file says what every later
  request left out;
- ``unsent_saving``: what the newest provider usage counted that the next request no longer carries
  (results cleared after the request it measured), so the threshold counts the request as sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.clearing import (
    Cleared,
    ResultKey,
    cleared_on_path,
    cleared_since_usage,
    plan_step,
    project,
    record_fields,
    result_entry_ids,
    rules_at,
    savings,
    tool_results,
)
from pi_compact.compaction.tokens import Estimator
from pi_compact.messages import Message
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings


class ToolClearing:
    """The cleared tool results of the current branch (by entry id) and where each result lives."""

    def __init__(self) -> None:
        self.cleared: dict[str, Cleared] = {}
        self.ids: dict[ResultKey, str] = {}  # a tool result (call id, time) -> the id of its entry
        # How many live messages there were when each result was cleared in this run: a reply whose request
        # was sent with fewer predates the step, so its usage still counts the original.
        self._at: dict[str, int] = {}

    def reload(self, store: SessionStore, live: int) -> None:
        """Read the branch's cleared set and result ids back from the file; ``live``: how many messages the
        rebuilt live context holds (results cleared after the newest reply's usage count as cleared then)."""
        tail = store.branch_tail()
        self.ids = result_entry_ids(tail)
        customs, _ = store.customs_on_path(store.leaf_id, None)
        self.cleared = cleared_on_path(customs)
        # A step after the last reply (at the end of a run, or before a request that failed) is not in the
        # usage that reply recorded: as in the run that cleared, the next figure subtracts its saving.
        self._at = {entry_id: live for entry_id in cleared_since_usage(tail) if entry_id in self.cleared}

    def note(self, entry: Mapping[str, Any]) -> None:
        """An entry was appended: a tool result's id is known from now on."""
        self.ids.update(result_entry_ids((entry,)))

    def sent(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` as the next request carries them."""
        return project(messages, self.ids, self.cleared)

    def carried(self, messages: Sequence[Message]) -> bool:
        """Does the request for ``messages`` carry any cleared result as its stub?"""
        return bool(self.cleared) and any(
            entry_id in self.cleared for _, _, entry_id, _ in tool_results(messages, self.ids) if entry_id)

    def cleared_in(self, messages: Sequence[Message], estimate: Estimator) -> tuple[int, int]:
        """How many tool results of ``messages`` the request carries as stubs, and the tokens of tool output
        that leaves out (originals less stubs)."""
        # The sizes recorded when each was cleared: the status line asks often, and re-estimating every
        # cleared original each time would cost more than all the rest of it.
        found = savings(messages, self.ids, self.cleared, estimate, recorded=True)
        return len(found), sum(found.values())

    def unsent_saving(self, messages: Sequence[Message], estimate: Estimator, anchor: int | None) -> int:
        """What a context size anchored on the usage of ``messages[anchor]`` (None: all estimated) counts for
        cleared results that the next request carries as stubs."""
        if not self.cleared:
            return 0
        late = {k: v for k, v in self.cleared.items() if anchor is None or self._at.get(k, 0) > anchor}
        return sum(savings(messages, self.ids, late, estimate).values()) if late else 0

    def step(
        self, store: SessionStore, messages: Sequence[Message], estimate: Estimator, settings: CompactionSettings,
        budgets: Budgets, tokens: int, pinned: Callable[[], Iterable[str]], now_ms: int,
    ) -> tuple[Cleared, ...]:
        """Clear more when the context as sent (``tokens``) is past the point where a compaction would start
        and the rules find a large enough step; the step (recorded first), else ().

        ``budgets`` are the ones the compaction threshold is measured with (the model's answer room
        included), so clearing always gets its turn before a compaction would run."""
        rules = rules_at(settings, budgets.known_threshold)  # the budgets derived once
        start = budgets.soft_threshold if settings.background else budgets.threshold
        if rules is None or budgets.window <= 0 or tokens <= start:
            return ()
        new = plan_step(messages, self.ids, self.cleared, pinned(), estimate, rules)
        if new:
            store.append(record_fields(new), now_ms)
            for item in new:
                self.cleared[item.entry_id] = item
                self._at[item.entry_id] = len(messages)
        return new


def pinned_results(pins: Iterable[Any]) -> set[str]:
    """Entry ids that pins were made from (a pinned result is never cleared)."""
    return {p.source_id for p in pins if getattr(p, "source_id", None)}


def cleared_notice(count: int, freed: int, now: int) -> str:
    """The one line the user reads when a step cleared ``count`` results, freeing ``freed`` tokens."""
    results, them = ("result", "it") if count == 1 else ("results", "them")
    return (f"Cleared {count} old tool {results} from the context (~{freed:,} tokens; now ~{now:,}). The session "
            f"file keeps {them} word for word; the model can read {them} back with recall.")


__all__ = ["ToolClearing", "cleared_notice", "pinned_results"]
