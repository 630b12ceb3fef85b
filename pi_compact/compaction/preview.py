"""A dry-run report: what compacting a session would do right now, as plain JSON-ready data (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.serialize import serialize_conversation
from pi_compact.compaction.tokens import estimate_context_tokens, estimator_for, should_compact
from pi_compact.messages import convert_to_llm
from pi_compact.session.context import project_path
from pi_compact.settings import CompactionSettings


def plan_report(plan: CompactionPlan | None) -> dict[str, Any] | None:
    """The ten plan keys of the dry-run JSON."""
    if plan is None:
        return None
    return {
        "first_kept_entry_id": plan.first_kept_entry_id,
        "is_split_turn": plan.is_split_turn,
        "tokens_before": plan.tokens_before,
        "summarize_entry_ids": list(plan.summarize_entry_ids),
        "turn_prefix_entry_ids": list(plan.turn_prefix_entry_ids),
        "previous_summary": plan.previous_summary,
        "read_files": list(plan.read_files),
        "modified_files": list(plan.modified_files),
        "serialized_history": serialize_conversation(convert_to_llm(plan.messages_to_summarize)),
        "serialized_turn_prefix": serialize_conversation(convert_to_llm(plan.turn_prefix_messages)),
    }


def dry_run(
    path: Sequence[Mapping[str, Any]], settings: CompactionSettings, context_window: int
) -> tuple[dict[str, Any], CompactionPlan | None]:
    """The dry-run object (context size, threshold verdict, roles, plan) and the plan itself."""
    messages = project_path(path).messages
    tokens = estimate_context_tokens(messages, estimator_for(settings.token_estimator)).tokens
    plan = prepare_compaction(path, settings)
    report = {
        "context_tokens": tokens,
        "should_compact": should_compact(tokens, context_window, settings),
        "context_roles": [str(m.get("role")) for m in messages],
        "plan": plan_report(plan),
    }
    return report, plan
