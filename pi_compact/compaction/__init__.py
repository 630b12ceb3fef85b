"""The compaction core: pure functions over session entries and messages.

No litellm, rich, prompt_toolkit, network or file I/O here; a model, when one is needed, is passed in.
"""

from __future__ import annotations

from pi_compact.compaction.cut import CutPoint, find_cut_point, find_turn_start_index, find_valid_cut_points
from pi_compact.compaction.fileops import FileOps, file_lists, format_file_lists
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.serialize import serialize_conversation, truncate_tool_result
from pi_compact.compaction.threshold import fit_to_window, should_compact
from pi_compact.compaction.tokens import (
    ContextEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens_auto,
    estimate_tokens_chars4,
    estimator_for,
)

__all__ = [
    "CompactionPlan",
    "ContextEstimate",
    "CutPoint",
    "FileOps",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_tokens_auto",
    "estimate_tokens_chars4",
    "estimator_for",
    "file_lists",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "fit_to_window",
    "format_file_lists",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
    "truncate_tool_result",
]
