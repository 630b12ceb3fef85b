"""The update path (issue 41): the new messages are summarized on their own and merged into the previous
summary section by section, so what is new is the model's whole task and what was kept stays by code."""

from __future__ import annotations

from typing import Any

from builders import assistant, chain, compaction, compaction_settings, sized, user

from pi_compact.compaction.merge import merge_summaries, mergeable
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.compaction.summarize import SummaryBudget, summarize
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedModel

INFO = ModelInfo("test/model", "test", 100_000, None)
PREVIOUS = """## Goal
- Fix the late events in the ingest pipeline.

## Constraints & Preferences
- Do not edit anything under gen/.

## Progress
### Done
- [x] Clamped the window start in src/ingest/late_events.rs.

### In Progress
- [ ] Look at the batch writer.

### Blocked
- (none)

## Key Decisions
- **Deduplication**: by offset, because two events can share a payload.

## Next Steps
1. Look at the batch writer.

## Critical Context
- Ticket OPS-4242.
- LATE_EVENT_GRACE_MS = 506.

<read-files>
src/ingest/batch.rs
</read-files>

<modified-files>
src/ingest/late_events.rs
</modified-files>"""
NEW = """## Goal
- Make the flush resumable.

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Added drain_late_events to src/sink/flush.rs.

### In Progress
- [ ] (none)

### Blocked
- (none)

## Key Decisions
- Saturating subtraction because a panic drops the batch.

## Next Steps
1. Add a property test for the window bounds.

## Critical Context
- Exact errors: "attempt to subtract with overflow"
- Values set: LATE_EVENT_GRACE_MS = 282"""


def test_a_merge_keeps_every_previous_item_and_adds_every_new_one_the_newest_value_only() -> None:
    merged = merge_summaries(PREVIOUS, NEW)
    for kept in ("Do not edit anything under gen/.", "Clamped the window start in src/ingest/late_events.rs.",
                 "by offset, because two events can share a payload", "Ticket OPS-4242.",
                 "Fix the late events in the ingest pipeline.", "Make the flush resumable.",
                 "Added drain_late_events to src/sink/flush.rs.",
                 "Saturating subtraction because a panic drops the batch.",
                 '"attempt to subtract with overflow"', "LATE_EVENT_GRACE_MS = 282"):
        assert kept in merged, kept
    assert "506" not in merged  # the value the user changed since
    # Where the work stands now is the new summary's: its next step, and nothing in progress.
    assert "1. Add a property test for the window bounds." in merged and "Look at the batch writer" not in merged
    assert "<read-files>" not in merged  # the file lists are the caller's to append, once


def test_a_merge_has_pis_sections_in_order_each_once() -> None:
    merged = merge_summaries(PREVIOUS, NEW)
    lines = merged.splitlines()
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Goal", "## Constraints & Preferences", "## Progress", "## Key Decisions",
                        "## Next Steps", "## Critical Context"]
    assert [line for line in lines if line.startswith("### ")] == ["### Done", "### In Progress", "### Blocked"]


def test_a_previous_summary_without_pis_sections_is_not_merged() -> None:
    assert mergeable(PREVIOUS) and not mergeable("The user explored a branch and came back.") and not mergeable(None)


def _request(model: ScriptedModel) -> str:
    return "\n".join(str(block.get("text", "")) for block in model.history[0].messages[-1]["content"])


def test_the_update_asks_about_the_new_messages_alone_and_keeps_the_previous_summary() -> None:
    entries = chain(user("Fix the late events. " + sized(600)), assistant("ok " + sized(600)),
                    user("third " + sized(300)), assistant("fine " + sized(300)), compaction(PREVIOUS, "test-id-2"),
                    user("Make the flush resumable. " + sized(600)), assistant("done " + sized(600)),
                    user("more " + sized(300)), assistant("fine " + sized(300)))
    plan = prepare_compaction(entries, compaction_settings(keep=400).compaction)
    assert plan is not None and plan.previous_summary == PREVIOUS
    model = ScriptedModel(INFO, NEW)
    result = summarize(plan, model, SummaryBudget.for_model(100_000, None, 1000))
    asked = _request(model)
    assert "<previous-summary>" not in asked and "OPS-4242" not in asked and "Make the flush resumable." in asked
    assert "Ticket OPS-4242." in result.summary and "LATE_EVENT_GRACE_MS = 282" in result.summary
    gate: Any = result.details.get("qualityGate")
    assert {"action": "mergedWithPrevious"} in gate
