"""What ``/context``'s breakdown is made of: the system prompt and tools, the summary, the kept tail and
the messages since, each estimated by the session's estimator and given as a share of the context
figure, so that the parts add up to the total shown above them (issue 35).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pi_compact.agent.session import AgentSession
from pi_compact.messages import Message
from pi_compact.session.entries import message_of_entry


@dataclass(frozen=True)
class Breakdown:
    """The live context split as compaction sees it (tokens, message counts): the system prompt and
    tools every request carries, the summary, the kept tail and what came since."""

    summary_tokens: int
    kept_tokens: int
    kept_count: int
    new_tokens: int
    new_count: int
    compacted: bool
    fixed_tokens: int = 0  # the system prompt and tool definitions

    @property
    def total(self) -> int:
        return self.fixed_tokens + self.summary_tokens + self.kept_tokens + self.new_tokens


def apportion(total: int, parts: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``parts`` (largest remainders), so that the shares sum to it exactly."""
    whole = sum(parts)
    if whole <= 0 or total < 0:
        return list(parts)
    shares = [part * total / whole for part in parts]
    floors = [int(share) for share in shares]
    order = sorted(range(len(parts)), key=lambda i: floors[i] - shares[i])  # biggest remainder first
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return floors


def breakdown(session: AgentSession, total: int | None = None) -> Breakdown:
    """Summary / kept tail / messages since the latest compaction (all "new" when never compacted), and
    the system prompt and tools. With ``total`` (the context figure ``/context`` shows) the parts are
    its shares: each estimated, then scaled so that they add up to it (issue 35: parts that summed to
    more than the total)."""
    estimate = session.estimator
    messages: Sequence[Message] = session.sent_messages  # as sent: cleared tool results are their stubs
    fixed = session.fixed_tokens()
    branch = session.store.branch_tail()  # from the latest compaction's kept entry: all this reads
    last = max((i for i, e in enumerate(branch) if e.get("type") == "compaction"), default=-1)
    if last < 0 or not messages or messages[0].get("role") != "compactionSummary":
        parts = Breakdown(0, 0, 0, sum(estimate(m) for m in messages), len(messages), False, fixed)
    else:
        new_count = sum(1 for e in branch[last + 1 :] if message_of_entry(e) is not None)
        new_count = min(new_count, len(messages) - 1)
        kept = messages[1 : len(messages) - new_count]
        new = messages[len(messages) - new_count :]
        parts = Breakdown(estimate(messages[0]), sum(estimate(m) for m in kept), len(kept),
                          sum(estimate(m) for m in new), len(new), True, fixed)
    if total is None:
        return parts
    fixed, summary, kept_tokens, new_tokens = apportion(
        total, [parts.fixed_tokens, parts.summary_tokens, parts.kept_tokens, parts.new_tokens])
    return replace(parts, fixed_tokens=fixed, summary_tokens=summary, kept_tokens=kept_tokens, new_tokens=new_tokens)


WINDOW_UNKNOWN = "unknown: start with --context-window N, or set the model's contextWindow in the settings"


def why_no_window(model: object) -> str:
    """Why ``/context`` has no window to show: the model still loads, or it failed (an unknown window)."""
    failure = str(getattr(model, "failure", None) or "")
    return WINDOW_UNKNOWN if "context window" in failure else "model not usable" if failure else "model loading"


__all__ = ["WINDOW_UNKNOWN", "Breakdown", "apportion", "breakdown", "why_no_window"]
