"""Where compaction cuts: valid cut points, turn starts, and find_cut_point with pi's quirks.

Ports the findCutPoint cases of pi's compaction.test.ts and replaces its vacuous split-turn test with
ones whose budget is really reached inside a turn. Sizes use ``sized(n)`` (exactly n chars4 tokens).
"""

from __future__ import annotations

from builders import (
    Entry,
    assistant,
    bash_execution,
    branch_summary,
    chain,
    compaction,
    custom_entry,
    custom_message_entry,
    label,
    model_change,
    session_info,
    sized,
    thinking_level_change,
    tool_call,
    tool_result,
    user,
)

from pi_compact.compaction.cut import CutPoint, find_cut_point, find_turn_start_index, find_valid_cut_points
from pi_compact.compaction.tokens import estimate_tokens_auto


def _cut(entries: list[Entry], keep: int, start: int = 0) -> CutPoint:
    return find_cut_point(entries, start, len(entries), keep)


# ---- valid cut points and turn starts ---------------------------------------------------------------


def test_valid_cut_points_are_message_roles_and_message_like_entries() -> None:
    entries = chain(
        user("u"),  # 0
        assistant("a"),  # 1
        tool_result("r"),  # 2
        bash_execution("ls", "x"),  # 3
        {"role": "custom", "customType": "c", "content": "c", "display": True},  # 4
        {"role": "branchSummary", "summary": "b", "fromId": "x"},  # 5
        {"role": "compactionSummary", "summary": "s", "tokensBefore": 1},  # 6
        branch_summary("b"),  # 7
        custom_message_entry("m"),  # 8
        compaction("s", "test-id-0"),  # 9
        model_change("openai", "gpt-4"),  # 10
        thinking_level_change("high"),  # 11
        custom_entry("state"),  # 12
        label("test-id-0", "here"),  # 13
        session_info("name"),  # 14
    )
    assert find_valid_cut_points(entries, 0, len(entries)) == [0, 1, 3, 4, 5, 6, 7, 8]


def test_valid_cut_points_respect_range() -> None:
    entries = chain(user("u"), assistant("a"), user("u"), assistant("a"))
    assert find_valid_cut_points(entries, 1, 3) == [1, 2]


def test_turn_start_is_nearest_user_or_bash_or_message_like_entry_at_or_before_index() -> None:
    entries = chain(
        user("u"),  # 0
        assistant("a"),  # 1
        tool_result("r"),  # 2
        bash_execution("ls", "x"),  # 3
        assistant("a"),  # 4
        custom_message_entry("m"),  # 5
        assistant("a"),  # 6
        branch_summary("b"),  # 7
    )
    assert find_turn_start_index(entries, 2, 0) == 0
    assert find_turn_start_index(entries, 4, 0) == 3
    assert find_turn_start_index(entries, 6, 0) == 5
    assert find_turn_start_index(entries, 7, 0) == 7
    assert find_turn_start_index(entries, 0, 0) == 0


def test_turn_start_is_minus_one_when_no_turn_start_in_range() -> None:
    entries = chain(user("u"), assistant("a"), tool_result("r"), assistant("a"))
    assert find_turn_start_index(entries, 3, 1) == -1


# ---- pi's findCutPoint cases --------------------------------------------------------------------------


def test_cut_keeps_everything_when_all_messages_fit() -> None:
    entries = chain(user("1"), assistant("a"), user("2"), assistant("b"))
    assert _cut(entries, 50000) == CutPoint(0, -1, False)


def test_cut_of_ten_short_turns_with_large_budget_is_first_message() -> None:
    items = []
    for i in range(10):
        items += [user(f"User {i}"), assistant(f"Assistant {i}")]
    assert _cut(chain(*items), 2500) == CutPoint(0, -1, False)


def test_cut_at_lone_assistant_is_index_zero_split_free() -> None:
    # an assistant is a valid cut point; with no user before it there is no turn to split
    assert _cut(chain(assistant("a")), 1000) == CutPoint(0, -1, False)


def test_cut_without_any_valid_point_returns_start() -> None:
    entries = chain(user("u"), tool_result("r"), tool_result("s"))
    assert find_cut_point(entries, 1, 3, 10) == CutPoint(1, -1, False)


def test_cut_lands_on_message_where_budget_is_first_reached() -> None:
    items = []
    for _ in range(10):
        items += [user(sized(100)), assistant(sized(100))]
    entries = chain(*items)
    # 19 + 18 = 200 >= 200: cut at the user message 18, a whole turn
    assert _cut(entries, 200) == CutPoint(18, -1, False)


def test_cut_reaching_budget_at_assistant_is_split_turn() -> None:
    items = []
    for _ in range(10):
        items += [user(sized(100)), assistant(sized(100))]
    entries = chain(*items)
    # 100 + 100 + 100 = 300 >= 250 at index 17 (an assistant) -> split, turn starts at 16
    assert _cut(entries, 250) == CutPoint(17, 16, True)
    assert _cut(entries, 300) == CutPoint(17, 16, True)


def test_cut_inside_one_large_turn_is_split_with_exact_turn_start() -> None:
    entries = chain(
        user("T1"),  # 0
        assistant("A1"),  # 1
        user("T2"),  # 2
        assistant(sized(1000)),  # 3
        assistant(sized(1000)),  # 4
        assistant(sized(1000)),  # 5
    )
    cut = _cut(entries, 1500)
    assert cut == CutPoint(4, 2, True)
    assert entries[cut.first_kept_entry_index]["message"]["role"] == "assistant"


def test_cut_never_lands_on_tool_result_and_moves_forward() -> None:
    entries = chain(
        user("go"),  # 0
        assistant(tool_calls=[tool_call("bash", {"command": "ls"})]),  # 1
        tool_result(sized(1000)),  # 2: the budget is reached here
        assistant(sized(10)),  # 3: next valid point
    )
    cut = _cut(entries, 500)
    assert cut == CutPoint(3, 0, True)
    assert entries[cut.first_kept_entry_index]["message"]["role"] != "toolResult"


def test_cut_at_tool_result_with_no_later_cut_point_cuts_before_it_not_at_the_first_cut_point() -> None:
    # pi keeps everything here (CutPoint(0, -1, False)); we keep the call and its result and split the turn.
    entries = chain(
        user("go"),
        assistant(tool_calls=[tool_call("bash", {"command": "ls"})]),
        tool_result(sized(1000)),
    )
    assert _cut(entries, 500) == CutPoint(1, 0, True, over_budget=True)


def test_two_older_turns_are_cut_off_when_a_tool_loops_newest_result_fills_the_budget() -> None:
    # Issue 35.2: two turns of ~4k, then a tool loop whose newest result (~6.5k) alone exceeds the budget.
    entries = chain(
        user(sized(2000)),  # 0
        assistant(sized(2000)),  # 1
        user(sized(2000)),  # 2
        assistant(sized(2000)),  # 3
        user("fix the bug"),  # 4
        assistant(tool_calls=[tool_call("read", {"path": "a.py"})]),  # 5
        tool_result(sized(200)),  # 6
        assistant(tool_calls=[tool_call("read", {"path": "notes.md"})]),  # 7
        tool_result(sized(6500)),  # 8
    )
    cut = _cut(entries, 1000)
    assert cut == CutPoint(7, 4, True, over_budget=True)
    assert entries[cut.first_kept_entry_index]["message"]["role"] == "assistant"


def test_the_over_budget_cut_never_separates_a_tool_result_from_its_call() -> None:
    entries = chain(
        user(sized(2000)),  # 0
        assistant(sized(2000)),  # 1
        user("go"),  # 2
        assistant(tool_calls=[tool_call("ls", {}), tool_call("read", {"path": "x"})]),  # 3
        tool_result(sized(10)),  # 4
        tool_result(sized(3000)),  # 5
    )
    assert _cut(entries, 1000) == CutPoint(3, 2, True, over_budget=True)


def test_a_session_of_one_call_and_its_big_result_still_has_nothing_to_cut() -> None:
    entries = chain(assistant(tool_calls=[tool_call("ls", {})]), tool_result(sized(3000)))
    assert _cut(entries, 1000) == CutPoint(0, -1, False)


def test_where_pi_finds_a_cut_the_over_budget_rule_changes_nothing() -> None:
    entries = chain(
        user(sized(2000)),  # 0
        assistant(tool_calls=[tool_call("read", {"path": "x"})]),  # 1
        tool_result(sized(3000)),  # 2: fills the budget
        assistant("done"),  # 3: a valid point after it, so pi cuts here
    )
    assert _cut(entries, 1000) == CutPoint(3, 0, True)


def test_settings_entry_before_user_turns_finished_turn_into_split_turn() -> None:
    entries = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        thinking_level_change("high"),  # 2
        user(sized(1000)),  # 3: budget reached here (1000 + 1000)
        assistant(sized(1000)),  # 4
    )
    # the backward sweep pulls entry 2 in; the cut is no longer a user message, so the whole
    # previous turn [0, 2) becomes the "turn prefix" (pi quirk)
    assert _cut(entries, 2000) == CutPoint(2, 0, True)


def test_backward_sweep_pulls_every_non_message_entry_in_front_of_cut() -> None:
    entries = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        model_change("openai", "gpt-4"),  # 2
        label("test-id-0", "start"),  # 3
        custom_entry("state"),  # 4
        session_info("name"),  # 5
        user(sized(1000)),  # 6
        assistant(sized(1000)),  # 7
    )
    assert _cut(entries, 2000) == CutPoint(2, 0, True)


def test_backward_sweep_stops_at_compaction_entry() -> None:
    entries = chain(
        user("u"),  # 0
        assistant("a"),  # 1
        compaction("S", "test-id-0"),  # 2
        label("test-id-0", "x"),  # 3
        user(sized(1000)),  # 4
        assistant(sized(1000)),  # 5
    )
    assert _cut(entries, 2000).first_kept_entry_index == 3


def test_backward_sweep_stops_at_start() -> None:
    entries = chain(
        user("u"),  # 0
        thinking_level_change("low"),  # 1
        user(sized(1000)),  # 2
        assistant(sized(1000)),  # 3
    )
    assert find_cut_point(entries, 2, 4, 2000) == CutPoint(2, -1, False)


def test_cut_at_bash_execution_is_split_with_empty_prefix() -> None:
    entries = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        bash_execution("make", sized(1000)),  # 2
        assistant(sized(1000)),  # 3
    )
    assert _cut(entries, 2000) == CutPoint(2, 2, True)


def test_cut_pulled_onto_custom_message_is_split_with_empty_prefix() -> None:
    entries = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        custom_message_entry("reminder"),  # 2
        user(sized(1000)),  # 3
        assistant(sized(1000)),  # 4
    )
    assert _cut(entries, 2000) == CutPoint(2, 2, True)


def test_cut_moved_forward_onto_custom_message_is_split_with_empty_prefix() -> None:
    entries = chain(
        user("go"),  # 0
        assistant(tool_calls=[tool_call("bash", {"command": "ls"})]),  # 1
        tool_result(sized(1000)),  # 2
        custom_message_entry("note"),  # 3
        assistant(sized(10)),  # 4
    )
    assert _cut(entries, 500) == CutPoint(3, 3, True)


def test_custom_message_size_is_not_counted_toward_budget() -> None:
    entries = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        custom_message_entry(sized(100000)),  # 2: huge but free (pi quirk)
        user(sized(10)),  # 3
        assistant(sized(10)),  # 4
    )
    # 10 + 10 + (skip) + 1000 >= 1000 at index 1 -> cut at the assistant, turn start 0
    assert _cut(entries, 1000) == CutPoint(1, 0, True)


def test_branch_summary_size_is_not_counted_toward_budget() -> None:
    entries = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        branch_summary(sized(100000)),  # 2
        user(sized(10)),  # 3
        assistant(sized(10)),  # 4
    )
    assert _cut(entries, 1000) == CutPoint(1, 0, True)


def test_cut_uses_given_estimator() -> None:
    han = "\u4e2d" * 1000  # 250 tokens by chars4, 1000 by auto
    entries = chain(user("q"), assistant(han), user("r"), assistant(han))
    assert find_cut_point(entries, 0, 4, 900) == CutPoint(0, -1, False)
    assert find_cut_point(entries, 0, 4, 900, estimate_tokens_auto) == CutPoint(3, 2, True)


def test_cut_search_respects_start_index() -> None:
    entries = chain(user(sized(1000)), assistant(sized(1000)), user(sized(10)), assistant(sized(10)))
    assert find_cut_point(entries, 2, 4, 100000) == CutPoint(2, -1, False)
