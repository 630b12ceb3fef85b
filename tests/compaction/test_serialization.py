"""The conversation as text for the summarizer: block layout, tool-result truncation, JS semantics.

Ports pi's compaction-serialization.test.ts and pins what JavaScript would produce where Python
differs by default: UTF-16 lengths, compact JSON, and integer-like keys first in object order.
"""

from __future__ import annotations

from builders import (
    assistant,
    image_block,
    text_block,
    thinking_block,
    tool_call,
    tool_result,
    user,
    user_blocks,
)

from pi_compact.compaction.serialize import (
    FILE_READ_MAX_CHARS,
    format_tool_call,
    serialize_conversation,
    serialize_message,
    truncate_tool_result,
)
from pi_compact.jstext import js_json, js_key_order
from pi_compact.messages import COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX, convert_to_llm

# ---- tool-result truncation -------------------------------------------------------------------------


def test_long_tool_result_is_truncated_with_count_of_dropped_chars() -> None:
    out = serialize_conversation([tool_result("x" * 5000)])
    assert out == "[Tool result]: " + "x" * 2000 + "\n\n[... 3000 more characters truncated]"
    assert "x" * 2001 not in out


def test_tool_result_of_exactly_2000_chars_is_kept_whole() -> None:
    assert serialize_conversation([tool_result("x" * 2000)]) == "[Tool result]: " + "x" * 2000


def test_tool_result_of_2001_chars_drops_one() -> None:
    out = serialize_conversation([tool_result("x" * 2001)])
    assert out.endswith("x\n\n[... 1 more characters truncated]")


def test_short_tool_result_is_untouched() -> None:
    text = "x" * 1500
    assert serialize_conversation([tool_result(text)]) == f"[Tool result]: {text}"


def test_user_and_assistant_text_are_never_truncated() -> None:
    text = "y" * 5000
    out = serialize_conversation([user(text), assistant(text)])
    assert out == f"[User]: {text}\n\n[Assistant]: {text}"
    assert "truncated" not in out


def test_thinking_is_never_truncated() -> None:
    out = serialize_conversation([assistant(content=[thinking_block("t" * 5000)])])
    assert out == "[Assistant thinking]: " + "t" * 5000


def test_truncation_counts_emoji_as_two_units() -> None:
    # 1500 emoji = 3000 UTF-16 units: keep 1000 emoji, drop 1000 units (Python len() says 1500 < 2000)
    out = truncate_tool_result("\U0001f600" * 1500)
    assert out == "\U0001f600" * 1000 + "\n\n[... 1000 more characters truncated]"


def test_truncation_counts_cjk_as_one_unit() -> None:
    out = truncate_tool_result("\u5b57" * 2500)
    assert out == "\u5b57" * 2000 + "\n\n[... 500 more characters truncated]"


def test_truncation_through_surrogate_pair_keeps_high_half_like_javascript() -> None:
    # unit 2000 is the low half of the emoji: JS's slice keeps the lone high surrogate
    out = truncate_tool_result("x" * 1999 + "\U0001f600" + "y" * 100)
    assert out == "x" * 1999 + "\ud83d" + "\n\n[... 101 more characters truncated]"


# ---- message layout -----------------------------------------------------------------------------------


def test_user_text_blocks_join_without_separator_and_images_are_dropped() -> None:
    message = user_blocks(text_block("Hello "), image_block(), text_block("world"))
    assert serialize_message(message) == ["[User]: Hello world"]


def test_empty_user_and_tool_result_are_skipped() -> None:
    assert serialize_conversation([user(""), tool_result(images=1), user("hi")]) == "[User]: hi"


def test_tool_result_text_blocks_join_without_separator() -> None:
    message = tool_result("a")
    message["content"] = [text_block("ab"), image_block(), text_block("cd")]
    assert serialize_message(message) == ["[Tool result]: abcd"]


def test_assistant_blocks_are_thinking_then_text_then_calls_whatever_their_order() -> None:
    message = assistant(
        content=[
            tool_call("read", {"path": "a.py"}),
            text_block("first"),
            thinking_block("think 1"),
            tool_call("bash", {"command": "ls"}),
            text_block("second"),
            thinking_block("think 2"),
        ]
    )
    assert serialize_message(message) == [
        "[Assistant thinking]: think 1\nthink 2",
        "[Assistant]: first\nsecond",
        '[Assistant tool calls]: read(path="a.py"); bash(command="ls")',
    ]


def test_messages_are_joined_by_blank_lines() -> None:
    out = serialize_conversation([user("q"), assistant("a"), tool_result("r")])
    assert out == "[User]: q\n\n[Assistant]: a\n\n[Tool result]: r"


def test_summary_messages_serialize_as_user_after_conversion() -> None:
    summary = {"role": "compactionSummary", "summary": "S1", "tokensBefore": 10, "timestamp": 0}
    out = serialize_conversation(convert_to_llm([summary]))
    assert out == "[User]: " + COMPACTION_SUMMARY_PREFIX + "S1" + COMPACTION_SUMMARY_SUFFIX


def test_agent_roles_are_not_serialized_without_conversion() -> None:
    assert serialize_message({"role": "bashExecution", "command": "ls", "output": "x"}) == []


# ---- tool-call rendering --------------------------------------------------------------------------------


def test_tool_call_renders_arguments_as_json_values() -> None:
    assert format_tool_call(tool_call("grep", {"k": "v", "n": 1})) == 'grep(k="v", n=1)'


def test_tool_call_renders_nested_values_as_compact_json() -> None:
    call = tool_call("x", {"opts": {"a": [1, 2], "b": None, "c": True}, "s": 'say "hi"'})
    assert format_tool_call(call) == 'x(opts={"a":[1,2],"b":null,"c":true}, s="say \\"hi\\"")'


def test_tool_call_keeps_non_ascii_unescaped() -> None:
    assert format_tool_call(tool_call("w", {"text": "caf\u00e9 \u4e2d \U0001f600"})) == (
        'w(text="caf\u00e9 \u4e2d \U0001f600")'
    )


def test_tool_call_without_arguments_renders_empty_parentheses() -> None:
    assert format_tool_call(tool_call("ls", {})) == "ls()"


def test_tool_call_puts_integer_like_keys_first_in_ascending_order() -> None:
    call = tool_call("f", {"b": 1, "2": 2, "a": 3, "10": 4, "1": 5})
    assert format_tool_call(call) == "f(1=5, 2=2, 10=4, b=1, a=3)"


def test_js_key_order_leaves_non_index_keys_in_insertion_order() -> None:
    assert js_key_order({"z": 0, "01": 1, "-1": 2, "1.5": 3, "a": 4}) == ["z", "01", "-1", "1.5", "a"]


def test_js_json_reorders_integer_like_keys_in_nested_objects() -> None:
    assert js_json({"x": {"b": 1, "3": 2, "0": 3}}) == '{"x":{"0":3,"3":2,"b":1}}'


def test_js_key_order_does_not_treat_non_ascii_digits_as_indices() -> None:
    # "\u00b2" (superscript two) and "\u0661" (Arabic-Indic one) pass str.isdigit() but are plain
    # string keys in JavaScript: they keep insertion order after the real index "1".
    assert js_key_order({"\u00b2": 0, "\u0661": 1, "b": 2, "1": 3}) == ["1", "\u00b2", "\u0661", "b"]


def test_js_json_writes_floats_like_javascript() -> None:
    assert js_json([1e-7, 1e-5, 1.2345678901234568e20, 1e21]) == "[1e-7,0.00001,123456789012345680000,1e+21]"


def test_truncation_counts_lone_surrogates_as_one_unit() -> None:
    out = truncate_tool_result("\udc00" * 2001)
    assert out == "\udc00" * 2000 + "\n\n[... 1 more characters truncated]"


# ---- file reads for the summarizer ------------------------------------------------------------------


def test_file_read_result_is_cut_at_the_file_read_limit_with_count_of_dropped_chars() -> None:
    message = tool_result("f" * 1800, tool_name="read")
    assert serialize_message(message, FILE_READ_MAX_CHARS) == [
        "[Tool result]: " + "f" * 200 + "\n\n[... 1600 more characters truncated]"
    ]


def test_file_read_limit_leaves_other_tool_results_at_2000_chars() -> None:
    message = tool_result("b" * 1800, tool_name="bash")
    assert serialize_message(message, FILE_READ_MAX_CHARS) == ["[Tool result]: " + "b" * 1800]


def test_file_read_limit_never_keeps_more_than_pi_would() -> None:
    out = serialize_message(tool_result("f" * 5000, tool_name="read"), 4000)
    assert out == ["[Tool result]: " + "f" * 2000 + "\n\n[... 3000 more characters truncated]"]


def test_pi_text_keeps_2000_chars_of_a_file_read() -> None:
    out = serialize_conversation([tool_result("f" * 1800, tool_name="read")])
    assert out == "[Tool result]: " + "f" * 1800


# ---- long successful output, condensed for the summarizer ---------------------------------------------

PASSING_RUN = "\n".join([f"tests/test_quota.py::test_case_{n} PASSED" for n in range(20)] + ["", "20 passed in 7.68s"])


def test_a_long_successful_run_keeps_its_head_and_tally_for_the_summarizer() -> None:
    (out,) = serialize_message(tool_result(PASSING_RUN, tool_name="bash"), FILE_READ_MAX_CHARS, for_summarizer=True)
    lines = out.split("\n")
    assert lines[0] == "[Tool result]: tests/test_quota.py::test_case_0 PASSED"
    assert lines[2] == "tests/test_quota.py::test_case_2 PASSED"
    assert lines[3] == "[... 16 lines left out]"
    assert lines[-1] == "20 passed in 7.68s" and lines[-2] == ""
    assert len(lines) == 7


def test_a_failed_run_keeps_every_line_for_the_summarizer() -> None:
    failed = PASSING_RUN.replace("test_case_9 PASSED", "test_case_9 FAILED")
    (out,) = serialize_message(tool_result(failed, tool_name="bash", is_error=True), FILE_READ_MAX_CHARS,
                               for_summarizer=True)
    assert out == "[Tool result (failed)]: " + failed


def test_pi_text_keeps_a_long_successful_run_whole() -> None:
    assert serialize_conversation([tool_result(PASSING_RUN, tool_name="bash")]) == "[Tool result]: " + PASSING_RUN


def test_output_one_line_over_the_kept_lines_is_not_condensed() -> None:
    text = "\n".join(f"line {n}" for n in range(7))
    (out,) = serialize_message(tool_result(text, tool_name="grep"), FILE_READ_MAX_CHARS, for_summarizer=True)
    assert out == "[Tool result]: " + text
