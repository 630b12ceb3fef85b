"""A compaction planned ahead: the soft threshold, and whether a plan made earlier still holds (pure).

With ``compaction.background`` the summary is made before it is needed. Past the soft threshold
(``softThresholdPercent`` % of the point where compaction triggers) the plan a foreground compaction
would make at that moment is taken (``plan_ahead``) and summarized while the user reads. Later, at a
turn boundary, ``rebase`` says whether that plan still holds: only if the path it was made from is
still the start of the current path (nothing rewritten, no compaction since, no other branch) and the
budgets and model are the ones it was planned with. Then its cut and its summarized entries are
exactly what they were, and every entry added meanwhile lies after the cut, in the kept tail; with
nothing added meanwhile the rebased plan equals what ``prepare_compaction`` gives on the path now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction, skip_reason
from pi_compact.compaction.tokens import estimate_context_tokens, estimator_for
from pi_compact.messages import Message
from pi_compact.session.context import project_path
from pi_compact.session.entries import message_of_entry
from pi_compact.settings import CompactionSettings


def past_soft_threshold(context_tokens: int, budgets: Budgets, settings: CompactionSettings) -> bool:
    """True when background compaction is on and the context is strictly past the soft threshold of
    ``budgets`` (the plan's: ``softThresholdPercent`` of its threshold)."""
    return settings.enabled and settings.background and context_tokens > budgets.soft_threshold


@dataclass(frozen=True)
class Ahead:
    """A plan made ahead of time, with what it was made from."""

    plan: CompactionPlan
    path_ids: tuple[str, ...]  # the planned path's entry ids, root first
    settings: CompactionSettings
    model: str


def plan_ahead(path: Sequence[Mapping[str, Any]], settings: CompactionSettings, model: str) -> Ahead | None:
    """The foreground plan for ``path`` now, or None when a compaction would find nothing to summarize."""
    plan = prepare_compaction(path, settings, keep_newest=True)
    if skip_reason(path, plan) is not None or plan is None:
        return None
    return Ahead(plan, tuple(str(entry.get("id")) for entry in path), settings, model)


def rebase(
    ahead: Ahead, path: Sequence[Mapping[str, Any]], settings: CompactionSettings, model: str
) -> CompactionPlan | None:
    """``ahead``'s plan for the current ``path``: the same cut and summarized entries, the kept tail and
    ``tokensBefore`` as they are now; None when anything changed the plan."""
    count = len(ahead.path_ids)
    if settings != ahead.settings or model != ahead.model or len(path) < count:
        return None
    if any(str(entry.get("id")) != planned for entry, planned in zip(path[:count], ahead.path_ids, strict=True)):
        return None
    if any(entry.get("type") == "compaction" for entry in path[count:]):
        return None
    plan = ahead.plan
    if count == len(path):
        return plan
    kept: list[Message] = []
    for entry in path[plan.first_kept_entry_index :]:
        message = message_of_entry(entry)
        if message is not None:
            kept.append(message)
    before = estimate_context_tokens(project_path(path).messages, estimator_for(settings.token_estimator)).tokens
    return replace(plan, tokens_before=before, kept_messages=tuple(kept))


__all__ = ["Ahead", "past_soft_threshold", "plan_ahead", "rebase"]
