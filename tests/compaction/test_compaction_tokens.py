"""Token accounting: usage totals, last valid usage, the threshold, and both per-message estimators.

Ports the "Token calculation", "getLastAssistantUsage" and "shouldCompact" parts of pi's
compaction.test.ts, and pins the chars4 numbers (pi's estimateTokens) and the auto estimator's rules.
"""

from __future__ import annotations

from builders import (
    assistant,
    bash_execution,
    chain,
    image_block,
    text_block,
    tool_call,
    tool_result,
    usage,
    user,
    user_blocks,
)

from pi_compact.compaction.threshold import should_compact
from pi_compact.compaction.tokens import (
    ContextEstimate,
    calculate_context_tokens,
    context_usage,
    estimate_context_tokens,
    estimate_text_tokens,
    estimate_tokens_auto,
    estimate_tokens_chars4,
    estimator_for,
    last_assistant_usage,
)
from pi_compact.settings import CompactionSettings

# ---- calculate_context_tokens ---------------------------------------------------------------------


def test_context_tokens_is_total_of_usage_parts() -> None:
    assert calculate_context_tokens(usage(1000, 500, 200, 100)) == 1800


def test_context_tokens_of_all_zero_usage_is_zero() -> None:
    assert calculate_context_tokens(usage(0, 0, 0, 0)) == 0


def test_context_tokens_falls_back_to_sum_when_total_is_zero() -> None:
    assert calculate_context_tokens(usage(1000, 500, 200, 100, total=0)) == 1800


def test_context_tokens_prefers_reported_total_over_parts() -> None:
    assert calculate_context_tokens(usage(10, 20, total=5000)) == 5000


# ---- last_assistant_usage -------------------------------------------------------------------------


def test_last_assistant_usage_is_from_newest_assistant() -> None:
    entries = chain(
        user("1"), assistant("a", usage=usage(100, 50)), user("2"), assistant("b", usage=usage(200, 100))
    )
    found = last_assistant_usage(entries)
    assert found is not None and found["input"] == 200


def test_last_assistant_usage_skips_aborted_message() -> None:
    entries = chain(
        user("1"),
        assistant("a", usage=usage(100, 50)),
        user("2"),
        assistant("b", usage=usage(300, 150), stop_reason="aborted"),
    )
    found = last_assistant_usage(entries)
    assert found is not None and found["input"] == 100


def test_last_assistant_usage_skips_error_message() -> None:
    entries = chain(
        user("1"),
        assistant("a", usage=usage(100, 50)),
        assistant("", usage=usage(900, 0), stop_reason="error"),
    )
    found = last_assistant_usage(entries)
    assert found is not None and found["input"] == 100


def test_last_assistant_usage_is_none_without_assistant_messages() -> None:
    assert last_assistant_usage(chain(user("1"), user("2"))) is None


# ---- should_compact -------------------------------------------------------------------------------

_SETTINGS = CompactionSettings(enabled=True, reserve_tokens=10000, keep_recent_tokens=20000)


def test_should_compact_when_context_exceeds_threshold() -> None:
    assert should_compact(95000, 100000, _SETTINGS) is True


def test_should_not_compact_below_threshold() -> None:
    assert should_compact(89000, 100000, _SETTINGS) is False


def test_should_not_compact_exactly_at_threshold() -> None:
    assert should_compact(90000, 100000, _SETTINGS) is False
    assert should_compact(90001, 100000, _SETTINGS) is True


def test_should_not_compact_when_disabled() -> None:
    disabled = CompactionSettings(enabled=False, reserve_tokens=10000)
    assert should_compact(95000, 100000, disabled) is False


# ---- estimate_context_tokens ----------------------------------------------------------------------


def test_context_estimate_without_usage_sums_message_estimates() -> None:
    messages = [user("x" * 40), assistant("y" * 80, stop_reason="aborted", usage=usage(999))]
    estimate = estimate_context_tokens(messages)
    assert (estimate.tokens, estimate.usage_tokens, estimate.trailing_tokens) == (30, 0, 30)
    assert estimate.last_usage_index is None


def test_context_estimate_anchors_on_last_valid_usage_plus_trailing() -> None:
    messages = [
        user("q"),
        assistant("a", usage=usage(1000, 200)),
        user("x" * 40),  # 10
        assistant("y" * 20, usage=usage(5000), stop_reason="error"),  # 5, usage ignored
    ]
    estimate = estimate_context_tokens(messages)
    assert (estimate.tokens, estimate.usage_tokens, estimate.trailing_tokens) == (1215, 1200, 15)
    assert estimate.last_usage_index == 1


def test_context_usage_passes_over_usage_from_before_the_fresh_part() -> None:
    messages = [
        assistant("kept", usage=usage(9000)),  # reported before the latest compaction: stale
        user("x" * 40),  # 10
        assistant("y" * 20, usage=usage(3000)),
        user("z" * 80),  # 20
    ]
    assert context_usage(messages, fresh_from=2) == ContextEstimate(3020, 3000, 20, 2)
    stale_only = context_usage(messages[:2], fresh_from=1)
    assert (stale_only.tokens, stale_only.last_usage_index) == (1 + 10, None)  # all estimated


def test_context_usage_passes_over_an_empty_usage_unlike_pis_estimate() -> None:
    messages = [assistant("a", usage=usage(1000)), user("x" * 40), assistant("b" * 4, usage=usage(0))]
    assert context_usage(messages).last_usage_index == 0
    assert estimate_context_tokens(messages).last_usage_index == 2  # pi anchors on it


# ---- chars4 estimator ------------------------------------------------------------------------------


def test_chars4_user_string_rounds_up() -> None:
    assert estimate_tokens_chars4(user("abcde")) == 2
    assert estimate_tokens_chars4(user("abcd")) == 1
    assert estimate_tokens_chars4(user("")) == 0


def test_chars4_user_text_blocks_are_summed_and_images_ignored() -> None:
    message = user_blocks(text_block("abcd"), image_block(), text_block("efgh"))
    assert estimate_tokens_chars4(message) == 2


def test_chars4_assistant_counts_text_thinking_and_tool_call_name_plus_compact_json() -> None:
    # "hello" 5 + "hmm" 3 + "read" 4 + '{"path":"a.txt"}' 16 = 28 chars -> 7
    message = assistant("hello", thinking="hmm", tool_calls=[tool_call("read", {"path": "a.txt"})])
    assert estimate_tokens_chars4(message) == 7


def test_chars4_tool_call_arguments_use_compact_json_without_spaces() -> None:
    # "t" + '{"a":1,"b":"c"}' = 16 chars -> 4; with Python's default separators it would be 19 -> 5
    message = assistant(content=[tool_call("t", {"a": 1, "b": "c"})])
    assert estimate_tokens_chars4(message) == 4


def test_chars4_tool_call_integral_float_is_written_like_javascript() -> None:
    # JSON.stringify(1.0) is "1": "t" + '{"n":1}' = 8 chars -> 2 ('{"n":1.0}' would give 10 -> 3)
    message = assistant(content=[tool_call("t", {"n": 1.0})])
    assert estimate_tokens_chars4(message) == 2


def test_chars4_signatures_are_not_counted() -> None:
    block = {"type": "text", "text": "abcd", "textSignature": "s" * 400}
    assert estimate_tokens_chars4(assistant(content=[block])) == 1


def test_chars4_tool_result_image_counts_4800_chars() -> None:
    assert estimate_tokens_chars4(tool_result("abcd", images=1)) == 1201
    assert estimate_tokens_chars4(tool_result(images=2)) == 2400


def test_chars4_custom_message_image_counts_4800_chars() -> None:
    message = {"role": "custom", "customType": "x", "content": [image_block()], "display": True}
    assert estimate_tokens_chars4(message) == 1200


def test_chars4_custom_string_content_is_counted() -> None:
    message = {"role": "custom", "customType": "x", "content": "x" * 41, "display": True}
    assert estimate_tokens_chars4(message) == 11


def test_chars4_bash_execution_counts_command_and_output() -> None:
    # "ls -la" 6 + output 10 = 16 -> 4; counted even when excluded from the context
    assert estimate_tokens_chars4(bash_execution("ls -la", "0123456789")) == 4
    assert estimate_tokens_chars4(bash_execution("ls -la", "0123456789", exclude=True)) == 4


def test_chars4_summaries_count_summary_text() -> None:
    compaction_summary = {"role": "compactionSummary", "summary": "s" * 9, "tokensBefore": 5, "timestamp": 0}
    branch = {"role": "branchSummary", "summary": "b" * 12, "fromId": "x", "timestamp": 0}
    assert estimate_tokens_chars4(compaction_summary) == 3
    assert estimate_tokens_chars4(branch) == 3


def test_chars4_unknown_role_counts_zero() -> None:
    assert estimate_tokens_chars4({"role": "mystery", "content": "x" * 100}) == 0


def test_chars4_counts_utf16_code_units_so_emoji_counts_two() -> None:
    # three emoji = 6 UTF-16 code units -> 2 tokens (Python's len() would say 3 -> 1)
    assert estimate_tokens_chars4(user("\U0001f600" * 3)) == 2


def test_chars4_counts_cjk_like_pi_at_one_unit_per_char() -> None:
    assert estimate_tokens_chars4(user("\u4e2d" * 100)) == 25


# ---- auto estimator --------------------------------------------------------------------------------

_ASCII_MESSAGES = [
    user("Please refactor the parser in src/parse.py"),
    user_blocks(text_block("abc"), image_block()),
    assistant("Sure.", thinking="plan it", tool_calls=[tool_call("edit", {"path": "p.py", "n": 3})]),
    tool_result("x" * 1001, images=1),
    bash_execution("git status", "clean"),
    {"role": "compactionSummary", "summary": "y" * 77, "tokensBefore": 1, "timestamp": 0},
]


def test_auto_equals_chars4_on_ascii_text() -> None:
    assert [estimate_tokens_auto(m) for m in _ASCII_MESSAGES] == [
        estimate_tokens_chars4(m) for m in _ASCII_MESSAGES
    ]


def test_auto_equals_chars4_on_accented_latin_and_emoji() -> None:
    for text in ("café déjà vu, naïve façade " * 7, "\U0001f600\U0001f680 ok \u2764" * 11, "Grüße aus Köln"):
        message = user(text)
        assert estimate_tokens_auto(message) == estimate_tokens_chars4(message), text


def test_auto_counts_one_token_per_han_character() -> None:
    assert estimate_tokens_auto(user("\u4e2d" * 100)) == 100


def test_auto_counts_kana_and_hangul_as_wide() -> None:
    assert estimate_tokens_auto(user("\u3053\u3093\u306b\u3061\u306f")) == 5  # hiragana
    assert estimate_tokens_auto(user("\uc548\ub155\ud558\uc138\uc694")) == 5  # hangul


def test_auto_counts_kana_at_93_percent_rounded_up() -> None:
    # Kana weigh 0.93 (fitted by benchmarks/bench_estimator.py); Han and hangul 1; the sum rounds up.
    assert estimate_tokens_auto(user("\u3042" * 100)) == 93  # hiragana
    assert estimate_tokens_auto(user("\u30a2" * 100 + "\u4e2d" * 100)) == 193  # katakana + Han
    assert estimate_text_tokens("abcd" + "\u3042" * 10, "auto") == 1 + 10  # ceil(9.3) = 10


def test_auto_on_mixed_text_is_narrow_over_four_plus_wide() -> None:
    # "hello " is 6 narrow chars -> ceil(6/4) = 2, plus 2 Han characters
    assert estimate_tokens_auto(user("hello \u4e16\u754c")) == 4


def test_auto_adds_images_to_narrow_part() -> None:
    # 4800 (image) + 4 ("abcd") narrow -> 1201, plus 3 Han characters
    assert estimate_tokens_auto(tool_result("abcd\u4e00\u4e01\u4e02", images=1)) == 1204


def test_estimator_for_names_the_two_estimators() -> None:
    assert estimator_for("chars4") is estimate_tokens_chars4
    assert estimator_for("auto") is estimate_tokens_auto


def test_text_estimate_for_bare_strings() -> None:
    assert estimate_text_tokens("abcdefgh", "chars4") == 2
    assert estimate_text_tokens("ab\u4e2d\u6587", "chars4") == 1
    assert estimate_text_tokens("ab\u4e2d\u6587", "auto") == 3


def test_context_estimate_uses_given_estimator_for_trailing_messages() -> None:
    messages = [assistant("a", usage=usage(100)), user("\u4e2d" * 40)]
    assert estimate_context_tokens(messages, estimate_tokens_chars4).tokens == 110
    assert estimate_context_tokens(messages, estimate_tokens_auto).tokens == 140



def test_lone_surrogate_counts_one_unit_like_javascript() -> None:
    # pi sessions can hold lone surrogates (text cut inside an emoji, stored as a \ud83d escape)
    assert estimate_tokens_chars4(user("abc\ud83d")) == 1
    assert estimate_tokens_chars4(user("abcd\ud83d")) == 2
    assert estimate_tokens_auto(user("abcd\ud83d")) == 2
