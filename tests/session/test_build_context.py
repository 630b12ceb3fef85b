"""build_session_context: what the model sees from a leaf (pi's build-context tests, plus retainedTail).

Trees use explicit ids "1".."11" like pi's build-context.test.ts; linear sessions use ``chain``.
"""

from __future__ import annotations

from typing import Any

from builders import (
    TIMESTAMP_MS,
    Entry,
    assistant,
    branch_summary,
    chain,
    compaction,
    custom_entry,
    custom_message_entry,
    label,
    model_change,
    msg,
    roles,
    session_info,
    thinking_level_change,
    user,
)

from pi_compact.messages import Message, text_of
from pi_compact.session.context import SessionContext, build_session_context


def _texts(context: SessionContext) -> list[str]:
    """The visible text of each message (summaries as their summary)."""
    out: list[str] = []
    for message in context.messages:
        if message.get("role") in ("compactionSummary", "branchSummary"):
            out.append(str(message["summary"]))
        else:
            out.append(text_of(message.get("content")))
    return out


def _u(entry_id: str, parent: str | None, text: str) -> Entry:
    return msg(user(text), id=entry_id, parent=parent)


def _a(entry_id: str, parent: str | None, text: str, **kwargs: Any) -> Entry:
    return msg(assistant(text, **kwargs), id=entry_id, parent=parent)


# ---- trivial --------------------------------------------------------------------------------------


def test_no_entries_give_empty_context() -> None:
    assert build_session_context([]) == SessionContext((), "off", None)


def test_single_user_message() -> None:
    context = build_session_context([_u("1", None, "hello")])
    assert _texts(context) == ["hello"]
    assert (context.thinking_level, context.model) == ("off", None)


def test_linear_chain_keeps_order() -> None:
    entries = [_u("1", None, "q1"), _a("2", "1", "r1"), _u("3", "2", "q2"), _a("4", "3", "r2")]
    context = build_session_context(entries)
    assert roles(context.messages) == ["user", "assistant", "user", "assistant"]
    assert _texts(context) == ["q1", "r1", "q2", "r2"]


def test_thinking_level_change_sets_level_and_emits_nothing() -> None:
    entries = [_u("1", None, "q"), thinking_level_change("high", id="2", parent="1"), _a("3", "2", "r")]
    context = build_session_context(entries)
    assert context.thinking_level == "high"
    assert len(context.messages) == 2


def test_model_comes_from_assistant_message() -> None:
    entries = [_u("1", None, "q"), _a("2", "1", "r", provider="openai", model="gpt-4o")]
    assert build_session_context(entries).model == ("openai", "gpt-4o")


def test_model_change_sets_model_without_assistant() -> None:
    entries = [model_change("openai", "gpt-4", id="1", parent=None), _u("2", "1", "q")]
    assert build_session_context(entries).model == ("openai", "gpt-4")


def test_assistant_after_model_change_overrides_it() -> None:
    entries = chain(
        user("q"),
        model_change("openai", "gpt-4"),
        assistant("r"),
        thinking_level_change("high"),
    )
    context = build_session_context(entries)
    assert context.model == ("anthropic", "claude-sonnet-4-5")
    assert context.thinking_level == "high"
    assert len(context.messages) == 2


def test_non_context_entries_emit_nothing() -> None:
    entries = chain(
        user("q"),
        label("test-id-0", "start"),
        custom_entry("state", {"x": 1}),
        session_info("name"),
        assistant("r"),
    )
    assert roles(build_session_context(entries).messages) == ["user", "assistant"]


def test_custom_message_entry_becomes_custom_message_with_epoch_timestamp() -> None:
    entries = chain(user("q"), custom_message_entry("note text", custom_type="hint", details={"k": 1}))
    message = build_session_context(entries).messages[1]
    assert dict(message) == {
        "role": "custom",
        "customType": "hint",
        "content": "note text",
        "display": True,
        "details": {"k": 1},
        "timestamp": TIMESTAMP_MS,
    }


def test_empty_branch_summary_emits_nothing() -> None:
    entries = chain(user("q"), branch_summary(""), assistant("r"))
    assert roles(build_session_context(entries).messages) == ["user", "assistant"]


# ---- compaction -------------------------------------------------------------------------------------


def _compacted() -> list[Entry]:
    return [
        _u("1", None, "first"),
        _a("2", "1", "response1"),
        _u("3", "2", "second"),
        _a("4", "3", "response2"),
        compaction("Summary of first", "3", 1234, id="5", parent="4", timestamp="2025-01-01T00:00:01.000Z"),
        _u("6", "5", "third"),
        _a("7", "6", "response3"),
    ]


def test_single_compaction_gives_summary_then_kept_then_later_messages() -> None:
    context = build_session_context(_compacted())
    assert roles(context.messages) == ["compactionSummary", "user", "assistant", "user", "assistant"]
    assert _texts(context) == ["Summary of first", "second", "response2", "third", "response3"]


def test_compaction_summary_message_carries_tokens_before_and_entry_time() -> None:
    summary: Message = build_session_context(_compacted()).messages[0]
    assert dict(summary) == {
        "role": "compactionSummary",
        "summary": "Summary of first",
        "tokensBefore": 1234,
        "timestamp": TIMESTAMP_MS + 1000,
    }


def test_compaction_summary_message_carries_the_provider_compaction_of_its_entry() -> None:
    held = {"provider": "anthropic", "api": "anthropic-messages", "model": "claude-sonnet-4-6",
            "block": {"type": "compaction", "content": "Block text"}}
    entries = [_u("1", None, "first"), _a("2", "1", "response1"),
               compaction("Block text", "1", id="3", parent="2", details={"providerCompaction": held}),
               _u("4", "3", "next")]
    summary: Message = build_session_context(entries).messages[0]
    assert summary["summary"] == "Block text" and summary["providerCompaction"] == held


def test_compaction_keeping_from_first_entry_keeps_everything() -> None:
    entries = [
        _u("1", None, "first"),
        _a("2", "1", "response1"),
        compaction("S", "1", id="3", parent="2"),
        _u("4", "3", "next"),
    ]
    assert _texts(build_session_context(entries)) == ["S", "first", "response1", "next"]


def test_only_latest_of_two_compactions_matters() -> None:
    entries = [
        _u("1", None, "first"),
        _a("2", "1", "response1"),
        compaction("First summary", "1", id="3", parent="2"),
        _u("4", "3", "second"),
        _a("5", "4", "response2"),
        compaction("Second summary", "4", id="6", parent="5"),
        _u("7", "6", "third"),
    ]
    context = build_session_context(entries)
    assert _texts(context) == ["Second summary", "second", "response2", "third"]


def test_pi_multiple_compactions_case_keeps_five_messages() -> None:
    entries = chain(
        user("u1"),
        assistant("a"),
        compaction("first", "test-id-0"),
        user("u2"),
        assistant("b"),
        user("u3"),
        assistant("c"),
        compaction("second", "test-id-5"),
        user("u4"),
        assistant("d"),
    )
    context = build_session_context(entries)
    assert _texts(context) == ["second", "u3", "c", "u4", "d"]


def test_earlier_compaction_inside_kept_range_is_skipped() -> None:
    entries = chain(
        user("u1"),
        compaction("old", "test-id-0"),
        user("u2"),
        compaction("new", "test-id-0"),
        user("u3"),
    )
    assert _texts(build_session_context(entries)) == ["new", "u1", "u2", "u3"]


def test_first_kept_id_not_on_path_keeps_no_earlier_entries() -> None:
    entries = chain(user("u1"), assistant("a1"), compaction("S", "elsewhere"), user("u2"))
    assert _texts(build_session_context(entries)) == ["S", "u2"]


def test_retained_tail_is_read_instead_of_first_kept_walk() -> None:
    tail = [user("tail question"), assistant("tail answer")]
    entries = chain(
        user("u1"),
        assistant("a1"),
        user("u2"),
        assistant("a2"),
        compaction("S", "test-id-0", retained_tail=tail),
        user("after"),
    )
    context = build_session_context(entries)
    assert _texts(context) == ["S", "tail question", "tail answer", "after"]


def test_retained_tail_does_not_need_earlier_entries_to_exist() -> None:
    # a self-contained checkpoint: the compaction is a root whose kept messages live in its tail
    entries = [
        compaction("S", "gone", retained_tail=[user("kept")], id="c", parent=None),
        _u("n", "c", "after"),
    ]
    assert _texts(build_session_context(entries)) == ["S", "kept", "after"]


def test_empty_retained_tail_keeps_nothing_before_compaction() -> None:
    entries = chain(user("u1"), compaction("S", "test-id-0", retained_tail=[]), user("after"))
    assert _texts(build_session_context(entries)) == ["S", "after"]


def test_without_retained_tail_first_kept_walk_is_used() -> None:
    entries = chain(user("u1"), assistant("a1"), user("u2"), compaction("S", "test-id-1"), user("after"))
    assert _texts(build_session_context(entries)) == ["S", "a1", "u2", "after"]


# ---- branches ------------------------------------------------------------------------------------------


def _two_branches() -> list[Entry]:
    return [
        _u("1", None, "start"),
        _a("2", "1", "response"),
        _u("3", "2", "branch A"),
        _u("4", "2", "branch B"),
    ]


def test_leaf_selects_first_branch() -> None:
    context = build_session_context(_two_branches(), "3")
    assert _texts(context) == ["start", "response", "branch A"]


def test_leaf_selects_second_branch() -> None:
    context = build_session_context(_two_branches(), "4")
    assert _texts(context) == ["start", "response", "branch B"]


def test_branch_summary_sits_where_the_branch_left_off() -> None:
    entries = [
        _u("1", None, "start"),
        _a("2", "1", "response"),
        _u("3", "2", "abandoned"),
        branch_summary("Tried approach A", "3", id="4", parent="2"),
        _u("5", "4", "new direction"),
    ]
    context = build_session_context(entries, "5")
    assert roles(context.messages) == ["user", "assistant", "branchSummary", "user"]
    assert dict(context.messages[2]) == {
        "role": "branchSummary",
        "summary": "Tried approach A",
        "fromId": "3",
        "timestamp": TIMESTAMP_MS,
    }


def _complex_tree() -> list[Entry]:
    return [
        _u("1", None, "start"),
        _a("2", "1", "r1"),
        _u("3", "2", "q2"),
        _a("4", "3", "r2"),
        compaction("Compacted history", "3", id="5", parent="4"),
        _u("6", "5", "q3"),
        _a("7", "6", "r3"),
        # side path leaving after "q2", with a summary of the abandoned main line
        branch_summary("Main line summary", "7", id="8", parent="3"),
        label("3", "fork point", id="9", parent="8"),
        thinking_level_change("high", id="10", parent="9"),
        _a("11", "10", "better approach"),
    ]


def test_complex_tree_main_leaf_sees_compacted_main_line() -> None:
    context = build_session_context(_complex_tree(), "7")
    assert _texts(context) == ["Compacted history", "q2", "r2", "q3", "r3"]
    assert context.thinking_level == "off"


def test_complex_tree_side_leaf_sees_branch_summary_and_no_compaction() -> None:
    context = build_session_context(_complex_tree(), "11")
    assert roles(context.messages) == ["user", "assistant", "user", "branchSummary", "assistant"]
    assert _texts(context) == ["start", "r1", "q2", "Main line summary", "better approach"]
    assert context.thinking_level == "high"


# ---- leaf edge cases --------------------------------------------------------------------------------------


def test_unknown_leaf_falls_back_to_last_entry() -> None:
    entries = [_u("1", None, "q"), _a("2", "1", "r")]
    assert _texts(build_session_context(entries, "nonexistent")) == ["q", "r"]


def test_missing_leaf_argument_uses_last_entry_in_file_order() -> None:
    assert _texts(build_session_context(_two_branches())) == ["start", "response", "branch B"]


def test_orphan_whose_parent_is_missing_gives_only_itself() -> None:
    entries = [_u("1", None, "q"), _u("2", "missing", "orphan")]
    assert _texts(build_session_context(entries, "2")) == ["orphan"]


def test_leaf_none_gives_empty_context() -> None:
    entries = [_u("1", None, "q"), thinking_level_change("high", id="2", parent="1")]
    assert build_session_context(entries, None) == SessionContext((), "off", None)
