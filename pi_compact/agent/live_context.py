"""The live context: the messages the next request carries, and which of them count as fresh.

It is rebuilt from the session file at start and after every compaction, then grows as the turn
goes. The summary and the kept tail carry usage from before the latest compaction, which measured
a context that no longer exists (pi #1860): messages before ``fresh_from`` are estimated, never
anchored on. Messages written after it (a resumed session) are fresh and must be checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_compact.compaction.tokens import ContextEstimate, Estimator, context_usage
from pi_compact.messages import Message
from pi_compact.session.context import project_path
from pi_compact.session.store import SessionStore


class LiveContext:
    """The session's messages as the model sees them (``messages``) and where fresh usage starts."""

    def __init__(self, store: SessionStore) -> None:
        self.messages: list[Message] = []
        self.fresh_from = 0  # messages before this index predate the latest compaction
        self.reload(store)

    def reload(self, store: SessionStore) -> None:
        """Rebuild from the file (the summary, the kept tail, everything after)."""
        # The tail is all the context is made of (its projection is what ``context`` gives): a resumed
        # session's older entries stay unread.
        branch = store.branch_tail()
        self.messages = list(project_path(branch).messages)
        latest = max((i for i, e in enumerate(branch) if e.get("type") == "compaction"), default=None)
        after = len(project_path(branch[latest + 1 :]).messages) if latest is not None else len(self.messages)
        self.fresh_from = len(self.messages) - after

    def usage(self, estimator: Estimator) -> ContextEstimate:
        """The last fresh provider usage plus estimates of what follows it (else all estimated)."""
        return context_usage(self.messages, estimator, fresh_from=self.fresh_from)

    def last_fresh_reply(self) -> Message | None:
        """The newest assistant message written since the latest compaction."""
        return next((m for m in reversed(self.messages[self.fresh_from :]) if m.get("role") == "assistant"), None)

    def drop_failed_reply(self, reply: Mapping[str, Any]) -> None:
        """After an overflow compaction, leave the overflowed reply out of the rebuilt live context.

        It is the last entry of the file, so it lands in the kept tail (pi drops only ``error`` tails,
        delta §9.4). It is no conversation: an ``error`` or empty ``length`` reply is skipped on the
        wire, but in the live context it would sit between the prompt and the retried answer and
        shift what counts as fresh usage. It stays in the file.
        """
        if reply.get("stopReason") != "stop" and self.messages and self.messages[-1] == reply:
            self.messages.pop()
            self.fresh_from = min(self.fresh_from, len(self.messages))  # what follows is fresh


__all__ = ["LiveContext"]
