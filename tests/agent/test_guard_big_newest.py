"""The loop guard beside one big newest tool result (issue 44, the second walk on the embedded model).

Reading a ~40k-character NOTES.md on the 16,384-token window: two compactions in a row each freed a
little (14,056 -> ~12,203, then 16,198 -> ~14,162) because the read itself had to be kept, and the guard
turned automatic compaction off, though each next request fitted the window. A compaction that kept
more than keepRecentTokens for that message, where the next request fits or can be made to by cutting it
(as the overflow's retry does), has done all it could.
"""

from __future__ import annotations

from pi_compact.agent.compaction.guard import LoopGuard, after_compaction
from pi_compact.compaction.tokens import ContextUsage, estimator_for
from pi_compact.compaction.window import plan_window
from pi_compact.messages import Message
from pi_compact.model_facts import ModelInfo
from pi_compact.settings import CompactionSettings, Settings

LOCAL = ModelInfo("local", "local", 16_384, None)
PLAN = plan_window(Settings(compaction=CompactionSettings(reserve_tokens=3_000, keep_recent_tokens=2_000)), LOCAL)
READ: Message = {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                 "content": [{"type": "text", "text": "x"}]}


def _compacted(guard: LoopGuard, before: int, after: int, kept: Message = READ) -> None:
    after_compaction(ContextUsage(after, PLAN.window, PLAN.threshold, False), [kept], estimator_for("chars4"),
                     PLAN, (), guard, automatic=True, tokens_before=before, kept_over_budget=True)


def test_two_small_compactions_beside_a_newest_result_the_retry_can_cut_leave_automatic_compaction_on() -> None:
    guard = LoopGuard()
    _compacted(guard, 14_056, 12_203)
    _compacted(guard, 16_198, 14_162)
    assert guard.streak == 0 and not guard.should_stop


def test_two_small_compactions_beside_a_big_message_nothing_can_cut_still_stop_automatic_compaction() -> None:
    guard = LoopGuard()
    pasted: Message = {"role": "user", "content": [{"type": "text", "text": "a pasted log"}]}
    _compacted(guard, 16_198, 14_162, pasted)
    _compacted(guard, 16_198, 14_162, pasted)
    assert not PLAN.fits(14_162) and guard.should_stop
