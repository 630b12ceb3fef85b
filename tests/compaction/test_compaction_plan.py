"""prepare_compaction: the rows of delta §5.5 (pi 0.73.1, checked with node) and the plan's fields.

Paths are built with ``chain`` so ids are ``test-id-<index>``. The two 5.5 rows on the path
[u1, a1, u2, a2, C1(keep u2), u3, a3] need different message sizes (no single sizing gives
"cut at u3" for keep 1500 and "cut at a2" for keep 900), so each test sizes its own copy.
"""

from __future__ import annotations

from typing import Any

from builders import (
    Entry,
    assistant,
    chain,
    compaction,
    roles,
    sized,
    thinking_level_change,
    tool_call,
    tool_result,
    usage,
    user,
)

from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.settings import CompactionSettings


def _settings(keep: int, estimator: Any = "chars4") -> CompactionSettings:
    return CompactionSettings(keep_recent_tokens=keep, token_estimator=estimator)


def _plan(path: list[Entry], keep: int) -> CompactionPlan:
    plan = prepare_compaction(path, _settings(keep))
    assert plan is not None
    return plan


def _after_compaction_path(u2: int, a2: int, u3: int, a3: int, **c1: Any) -> list[Entry]:
    """[u1, a1, u2, a2, C1(keep u2), u3, a3(usage 5000)] with the given sizes in tokens."""
    return chain(
        user("first question"),  # test-id-0
        assistant("first answer"),  # test-id-1
        user(sized(u2)),  # test-id-2
        assistant(sized(a2)),  # test-id-3
        compaction("S1", "test-id-2", 4000, **c1),  # test-id-4
        user(sized(u3)),  # test-id-5
        assistant(sized(a3), usage=usage(4000, 1000)),  # test-id-6
    )


# ---- delta §5.5 rows ------------------------------------------------------------------------------


def test_second_compaction_summarizes_what_first_one_kept() -> None:
    plan = _plan(_after_compaction_path(u2=10, a2=10, u3=800, a3=1000), 1500)
    assert plan.first_kept_entry_id == "test-id-5"
    assert plan.first_kept_entry_index == 5
    assert plan.is_split_turn is False
    assert plan.summarize_entry_ids == ("test-id-2", "test-id-3")
    assert roles(plan.messages_to_summarize) == ["user", "assistant"]
    assert plan.turn_prefix_messages == ()
    assert plan.previous_summary == "S1"
    assert plan.tokens_before == 5000
    assert roles(plan.kept_messages) == ["user", "assistant"]


def test_split_turn_starting_at_previous_kept_entry_has_nothing_to_summarize() -> None:
    plan = _plan(_after_compaction_path(u2=10, a2=400, u3=300, a3=300), 900)
    assert plan.first_kept_entry_id == "test-id-3"
    assert plan.is_split_turn is True
    assert plan.messages_to_summarize == ()
    assert plan.turn_prefix_entry_ids == ("test-id-2",)
    assert roles(plan.turn_prefix_messages) == ["user"]
    assert plan.previous_summary == "S1"
    assert plan.is_empty is False


def test_everything_after_previous_kept_entry_fits_gives_empty_plan() -> None:
    plan = _plan(_after_compaction_path(u2=10, a2=10, u3=10, a3=10), 1500)
    assert plan.first_kept_entry_id == "test-id-2"
    assert plan.is_split_turn is False
    assert plan.messages_to_summarize == ()
    assert plan.is_empty is True


def test_tiny_session_gives_plan_with_nothing_to_summarize() -> None:
    plan = _plan(chain(user("hi"), assistant("hello")), 20000)
    assert plan.first_kept_entry_id == "test-id-0"
    assert plan.is_split_turn is False
    assert plan.messages_to_summarize == ()
    assert plan.turn_prefix_messages == ()
    assert plan.previous_summary is None
    assert plan.is_empty is True


def test_empty_path_gives_no_plan() -> None:
    assert prepare_compaction([], _settings(20000)) is None


# ---- other refusals ---------------------------------------------------------------------------------


def test_path_ending_in_compaction_gives_no_plan() -> None:
    path = chain(user(sized(100)), assistant(sized(100)), compaction("S", "test-id-1"))
    assert prepare_compaction(path, _settings(10)) is None


def test_entry_without_id_at_cut_gives_no_plan() -> None:
    path = [{"type": "message", "timestamp": "x", "message": m} for m in (user("q"), assistant("a"))]
    assert prepare_compaction(path, _settings(20000)) is None


# ---- boundaries and token counts ---------------------------------------------------------------------


def test_previous_kept_id_missing_from_path_starts_after_previous_compaction() -> None:
    path = chain(
        user("old"),  # 0
        assistant("old"),  # 1
        compaction("S1", "no-such-id"),  # 2
        user(sized(1000)),  # 3
        assistant(sized(1000)),  # 4
        user(sized(1000)),  # 5
        assistant(sized(1000)),  # 6
    )
    plan = _plan(path, 2000)
    assert plan.first_kept_entry_id == "test-id-5"
    assert plan.summarize_entry_ids == ("test-id-3", "test-id-4")


def test_tokens_before_without_usage_is_sum_of_estimates() -> None:
    plan = _plan(chain(user(sized(30)), assistant(sized(12), usage=usage(9), stop_reason="aborted")), 20000)
    assert plan.tokens_before == 42


def test_tokens_before_is_usage_plus_trailing_estimate() -> None:
    path = chain(user("q"), assistant("a", usage=usage(700, 300)), user(sized(25)))
    assert _plan(path, 20000).tokens_before == 1025


def test_settings_entry_before_user_makes_previous_turn_the_prefix() -> None:
    path = chain(
        user(sized(1000)),  # 0
        assistant(sized(1000)),  # 1
        thinking_level_change("high"),  # 2
        user(sized(1000)),  # 3
        assistant(sized(1000)),  # 4
    )
    plan = _plan(path, 2000)
    assert plan.first_kept_entry_id == "test-id-2"
    assert plan.is_split_turn is True
    assert plan.messages_to_summarize == ()
    assert plan.turn_prefix_entry_ids == ("test-id-0", "test-id-1")


def test_estimator_comes_from_settings() -> None:
    han = "\u4e2d" * 1000  # 250 tokens by chars4, 1000 by auto
    path = chain(user("q"), assistant(han), user("r"), assistant(han))
    chars4 = prepare_compaction(path, _settings(900, "chars4"))
    auto = prepare_compaction(path, _settings(900, "auto"))
    assert chars4 is not None and auto is not None
    assert (chars4.first_kept_entry_id, chars4.is_split_turn) == ("test-id-0", False)
    assert (auto.first_kept_entry_id, auto.is_split_turn) == ("test-id-3", True)


# ---- file lists ---------------------------------------------------------------------------------------


def _tool_turn(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    return [user("do it"), assistant(tool_calls=calls, stop_reason="toolUse"), tool_result("ok")]


def test_file_lists_exclude_modified_from_read_and_are_sorted() -> None:
    path = chain(
        *_tool_turn(
            tool_call("read", {"path": "b.py"}),
            tool_call("read", {"path": "a.py"}),
            tool_call("edit", {"path": "a.py"}),
            tool_call("write", {"path": "c.py"}),
            tool_call("bash", {"command": "cat d.py"}),
        ),
        user(sized(1000)),
        assistant(sized(1000)),
    )
    plan = _plan(path, 2000)
    assert plan.first_kept_entry_id == "test-id-3"
    assert plan.read_files == ("b.py",)
    assert plan.modified_files == ("a.py", "c.py")


def test_files_touched_only_in_kept_region_are_not_listed() -> None:
    path = chain(
        user(sized(1000)),
        assistant(sized(1000)),
        *_tool_turn(tool_call("read", {"path": "kept.py"})),
        user(sized(1000)),
        assistant(sized(1000)),
    )
    # from the end: 1000 + 1000 + result 1 + call 6 + "do it" 2 = 2009 at the tool turn's user message
    plan = _plan(path, 2009)
    assert plan.first_kept_entry_id == "test-id-2"
    assert (plan.read_files, plan.modified_files) == ((), ())


def test_file_lists_include_turn_prefix_tool_calls() -> None:
    path = chain(
        user("go"),  # 0
        assistant(tool_calls=[tool_call("read", {"path": "prefix.py"})], stop_reason="toolUse"),  # 1
        tool_result("ok"),  # 2
        assistant(sized(1000)),  # 3
    )
    plan = _plan(path, 1000)
    assert plan.is_split_turn is True
    assert plan.turn_prefix_entry_ids == ("test-id-0", "test-id-1", "test-id-2")
    assert plan.read_files == ("prefix.py",)


def _seeded_path(from_hook: bool | None) -> list[Entry]:
    details = {"readFiles": ["old-read.py", "shared.py"], "modifiedFiles": ["old-mod.py"]}
    return chain(
        user("u1"),  # 0
        assistant("a1"),  # 1
        compaction("S1", "test-id-1", details=details, from_hook=from_hook),  # 2
        *_tool_turn(tool_call("edit", {"path": "shared.py"}), tool_call("read", {"path": "new.py"})),  # 3-5
        user(sized(1000)),  # 6
        assistant(sized(1000)),  # 7
    )


def test_file_lists_are_seeded_from_previous_compaction_details() -> None:
    plan = _plan(_seeded_path(from_hook=False), 2000)
    assert plan.first_kept_entry_id == "test-id-6"
    assert plan.read_files == ("new.py", "old-read.py")
    assert plan.modified_files == ("old-mod.py", "shared.py")


def test_file_lists_are_seeded_when_from_hook_is_absent() -> None:
    plan = _plan(_seeded_path(from_hook=None), 2000)
    assert plan.read_files == ("new.py", "old-read.py")


def test_file_lists_ignore_details_of_hook_compaction() -> None:
    plan = _plan(_seeded_path(from_hook=True), 2000)
    assert plan.read_files == ("new.py",)
    assert plan.modified_files == ("shared.py",)
