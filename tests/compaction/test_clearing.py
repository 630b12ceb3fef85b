"""Tool-result clearing as a pure projection: which results a step clears and what the request carries."""

from __future__ import annotations

from typing import Any

from builders import TIMESTAMP_MS, assistant, chain, sized, tool_call, tool_result, usage, user

from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.clearing import (
    Cleared,
    ClearRules,
    cleared_on_path,
    cleared_since_usage,
    plan_step,
    project,
    record_fields,
    result_entry_ids,
    rules_at,
    stub_text,
)
from pi_compact.compaction.tokens import estimate_tokens_chars4
from pi_compact.settings import CompactionSettings

RULES = ClearRules(keep_recent_tokens=2000, min_clear_tokens=1000)


def reads(count: int, tokens: int = 1000, *, last_error: bool = False) -> list[dict[str, Any]]:
    """A loop of ``count`` reads, each answered by the model, the last one's result unanswered."""
    messages: list[dict[str, Any]] = [user("read the files")]
    for i in range(count):
        messages.append(assistant(tool_calls=[tool_call("read", {"path": f"f{i}.py"}, f"c{i}")]))
        error = last_error and i == count - 1
        messages.append(tool_result(sized(tokens), tool_call_id=f"c{i}", tool_name="read", is_error=error))
    return messages


def ids_for(count: int) -> dict[tuple[str, Any], str]:
    return {(f"c{i}", TIMESTAMP_MS): f"e{i}" for i in range(count)}


def step(messages: list[dict[str, Any]], count: int, pinned: tuple[str, ...] = (),
         cleared: dict[str, Cleared] | None = None, rules: ClearRules = RULES) -> list[str]:
    found = plan_step(messages, ids_for(count), cleared or {}, pinned, estimate_tokens_chars4, rules)
    return [c.entry_id for c in found]


def test_a_step_clears_everything_older_than_the_protected_newest_output() -> None:
    # The newest two results fill keepRecentTokens (2,000): the six before them go in one step.
    assert step(reads(8), 8) == ["e0", "e1", "e2", "e3", "e4", "e5"]


def test_no_step_when_less_than_min_clear_tokens_could_go() -> None:
    assert step(reads(3), 3) == []  # one result outside the protected part: 1,000 tokens less its stub


def test_pinned_results_are_never_cleared() -> None:
    assert "e2" not in step(reads(8), 8, pinned=("e2",))


def test_the_results_the_model_has_not_answered_are_never_cleared() -> None:
    messages = reads(8)
    # The newest reply called six tools at once: all six results are unanswered, however large.
    calls = [tool_call("read", {"path": f"g{i}.py"}, f"d{i}") for i in range(6)]
    messages.append(assistant(tool_calls=calls))
    messages.extend(tool_result(sized(1000), tool_call_id=f"d{i}", tool_name="read") for i in range(6))
    ids = {**ids_for(8), **{(f"d{i}", TIMESTAMP_MS): f"g{i}" for i in range(6)}}
    found = plan_step(messages, ids, {}, (), estimate_tokens_chars4, ClearRules(0, 1))
    assert [c.entry_id for c in found] == [f"e{i}" for i in range(8)]


def test_an_error_the_model_has_not_acted_on_is_not_cleared() -> None:
    messages = reads(8, last_error=True)
    assert "e7" not in plan_step(messages, ids_for(8), {}, (), estimate_tokens_chars4, ClearRules(0, 1))


def test_image_results_are_cleared_like_text() -> None:
    messages = reads(8)
    messages[2] = {**messages[2], "content": [{"type": "image", "data": "A" * 40_000, "mimeType": "image/png"}]}
    projected = project(messages, ids_for(8), {"e0": Cleared("e0", 1200)})
    assert projected[2]["content"] == [{"type": "text", "text": stub_text("read", {"path": "f0.py"},
                                                                          Cleared("e0", 1200))}]


def test_the_stub_names_tool_arguments_size_entry_and_how_to_get_it_back() -> None:
    text = stub_text("read", {"path": "src/app.py"}, Cleared("a1b2c3d4", 12345))
    assert 'read {"path": "src/app.py"}' in text
    assert "~12,345 tokens" in text and "a1b2c3d4" in text
    assert 'recall with entry_id "a1b2c3d4"' in text and "run the tool again" in text


def test_long_arguments_are_shortened_in_the_stub() -> None:
    text = stub_text("bash", {"command": "x" * 500}, Cleared("e1", 10))
    assert len(text) < 400 and "…" in text


def test_a_cleared_result_keeps_the_same_stub_as_the_context_grows() -> None:
    cleared = {"e0": Cleared("e0", 1000)}
    first = project(reads(4), ids_for(4), cleared)
    later = project(reads(9), ids_for(9), cleared)
    assert later[: len(first) - 1] == first[: len(first) - 1]  # the last result of the short loop is unanswered
    assert first[2] == later[2] and first[2]["content"][0]["text"].startswith("[Tool result cleared")


def test_a_result_already_cleared_is_not_cleared_again() -> None:
    cleared = {f"e{i}": Cleared(f"e{i}", 1000) for i in range(6)}
    assert step(reads(8), 8, cleared=cleared) == []


def test_projection_leaves_every_other_field_and_message_alone() -> None:
    messages = reads(3)
    projected = project(messages, ids_for(3), {"e1": Cleared("e1", 1000)})
    assert projected[4] != messages[4]
    assert {k: v for k, v in projected[4].items() if k != "content"} == \
        {k: v for k, v in messages[4].items() if k != "content"}
    assert [m for i, m in enumerate(projected) if i != 4] == [m for i, m in enumerate(messages) if i != 4]


def test_the_cleared_set_is_read_back_from_its_records_on_the_path() -> None:
    path = chain(*reads(3), record_fields([Cleared("test-id-2", 900)]), record_fields([Cleared("test-id-4", 800)]))
    assert cleared_on_path(path) == {"test-id-2": Cleared("test-id-2", 900), "test-id-4": Cleared("test-id-4", 800)}
    assert result_entry_ids(path) == {("c0", TIMESTAMP_MS): "test-id-2", ("c1", TIMESTAMP_MS): "test-id-4",
                                      ("c2", TIMESTAMP_MS): "test-id-6"}


def rules_for(settings: CompactionSettings, window: int, answer_room: int = 0) -> ClearRules | None:
    return rules_at(settings, Budgets.of(settings, window, answer_room).known_threshold)


def test_defaults_are_scaled_down_on_a_small_window_and_kept_as_set() -> None:
    small = CompactionSettings(reserve_tokens=4096)
    assert rules_for(small, 16384) == ClearRules(3072, 1536)
    assert rules_for(CompactionSettings(), 200_000) == ClearRules(20_000, 20_000)
    assert rules_for(CompactionSettings(clear_keep_recent_tokens=9000, clear_min_tokens=100), 16384) == \
        ClearRules(9000, 100)
    assert rules_for(CompactionSettings(clear_tool_results=False), 200_000) is None


def test_a_call_id_a_server_uses_again_in_a_later_reply_clears_only_the_old_result() -> None:
    # Some servers number their calls call_0, call_1... anew in every reply: the result's time tells them apart.
    messages: list[dict[str, Any]] = [user("read")]
    for i, path in enumerate(["old.py", "new.py"]):
        messages.append(assistant(tool_calls=[tool_call("read", {"path": path}, "call_0")]))
        messages.append(tool_result(sized(1000), tool_call_id="call_0", tool_name="read", timestamp=i))
    ids = {("call_0", 0): "e-old", ("call_0", 1): "e-new"}
    projected = project(messages, ids, {"e-old": Cleared("e-old", 1000)})
    assert projected[2]["content"][0]["text"] == stub_text("read", {"path": "old.py"}, Cleared("e-old", 1000))
    assert projected[4] == messages[4]


def test_a_malformed_result_time_in_a_file_is_no_failure() -> None:
    path = chain(user("read"), {**tool_result("x", tool_call_id="c0"), "timestamp": [1, 2]})
    assert result_entry_ids(path) == {("c0", None): "test-id-1"}


def test_defaults_scale_to_the_threshold_the_answer_room_lowers() -> None:
    # 16,384 less an 8,192 answer room (not the 4,096 reserve): a threshold of 8,192, as compaction's.
    assert rules_for(CompactionSettings(reserve_tokens=4096), 16384, answer_room=8192) == ClearRules(2048, 1024)


def test_results_cleared_after_the_newest_measured_reply_are_the_late_ones() -> None:
    path = chain(*reads(3), record_fields([Cleared("test-id-2", 900)]), assistant("ok", usage=usage(input=500)),
                 record_fields([Cleared("test-id-4", 800)]), assistant(stop_reason="error", usage=usage(input=900)))
    assert cleared_since_usage(path) == {"test-id-4"}  # a failed reply's usage measures nothing


def test_a_result_followed_only_by_a_failed_reply_is_unanswered_and_kept() -> None:
    # The error reply never reached the model's eyes with the result: the converter drops it from requests.
    for reason in ("error", "aborted"):
        messages = [*reads(4), assistant(tool_calls=[tool_call("read", {"path": "big.py"}, "c4")]),
                    tool_result(sized(5000), tool_call_id="c4", tool_name="read"), assistant(stop_reason=reason)]
        assert step(messages, 5) == ["e0", "e1", "e2", "e3"]
