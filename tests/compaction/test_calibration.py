"""The calibrated estimator (issue 12 §4): a factor learned from pairs of replies scales ``auto`` estimates.

Pure tests of ``compaction/calibration.py`` on synthetic conversations whose usage follows a known
ratio, the pairs it must refuse (compaction, model change, aborted or failed replies, outliers), the
clamp, the window, and its scan carried on message by message. The session, dry-run and ``/context``
wiring is in ``test_calibration_wiring.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import assistant, sized, tool_call, tool_result, usage, user

from pi_compact.compaction import calibration
from pi_compact.compaction.calibration import Pair, calibrate, calibrated, fit, scan
from pi_compact.compaction.tokens import (
    UNCALIBRATED,
    Calibration,
    context_usage,
    estimate_tokens_auto,
)

Message = dict[str, Any]
OUTPUT = 50


def conversation(ratio: float, turns: int, *, result_tokens: int = 400, start: int = 2_000,
                 model: str = "claude-sonnet-4-5") -> list[Message]:
    """``turns`` tool rounds whose usage grows by ``ratio`` × the estimate of each tool result."""
    messages: list[Message] = [user(sized(100))]
    prompt = start
    for n in range(turns):
        call = tool_call("read", {"path": f"f{n}.py"}, call_id=f"c{n}")
        messages.append(assistant(usage=usage(input=prompt, output=OUTPUT), stop_reason="toolUse",
                                  tool_calls=[call], model=model))
        messages.append(tool_result(sized(result_tokens), tool_call_id=f"c{n}"))
        prompt += OUTPUT + round(ratio * result_tokens)
    return messages


def reply(prompt: int, **kwargs: Any) -> Message:
    return assistant(usage=usage(input=prompt, output=OUTPUT), stop_reason="toolUse", **kwargs)


def test_the_factor_is_what_the_provider_counted_over_what_we_estimated() -> None:
    found = calibrate(conversation(1.35, 6), estimate_tokens_auto)
    assert found.replies == 5  # six replies make five pairs
    assert found.factor == pytest.approx(1.35, abs=0.005)
    assert found.describe() == "calibrated ×1.35 from 5 replies"


def test_a_provider_that_counts_like_the_estimate_gives_factor_one() -> None:
    assert calibrate(conversation(1.0, 4), estimate_tokens_auto).factor == pytest.approx(1.0)


def test_one_pair_is_not_enough() -> None:
    assert calibrate(conversation(1.35, 2), estimate_tokens_auto) == UNCALIBRATED
    assert calibrate(conversation(1.35, 3), estimate_tokens_auto).replies == 2


def test_the_factor_is_clamped_to_half_and_two_and_a_half() -> None:
    assert calibrate(conversation(3.5, 5), estimate_tokens_auto).factor == 2.5
    assert calibrate(conversation(0.3, 5), estimate_tokens_auto).factor == 0.5


def test_pairs_across_a_compaction_are_not_counted() -> None:
    before = conversation(2.0, 3)  # the kept tail: two pairs at ×2
    last_total = before[-2]["usage"]["input"] + OUTPUT
    # Written since the compaction: two pairs at ×1.2. The first of these replies would pair with the
    # kept tail's last one across the compaction, at a plausible ×2 (1,000 tokens for 500 estimated).
    after = conversation(1.2, 3, start=last_total + 1_000)
    messages = [*before, *after]
    assert len(scan(messages, estimate_tokens_auto).pairs) == 5
    found = scan(messages, estimate_tokens_auto, fresh_from=len(before))
    assert [p.index for p in found.pairs] == [3, 5, 10, 12]
    assert calibrate(messages, estimate_tokens_auto, fresh_from=len(before)) == Calibration(
        pytest.approx((2 * 2.0 + 2 * 1.2) / 4, abs=0.005), 4)


def test_pairs_of_another_model_do_not_count_and_the_newest_model_decides() -> None:
    messages = conversation(2.0, 4, model="gpt-5.1-codex")
    prompt = messages[-2]["usage"]["input"] + OUTPUT + 2 * 400
    messages += [reply(prompt), tool_result(sized(400)), reply(prompt + OUTPUT + round(1.2 * 400)),
                 tool_result(sized(400)), reply(prompt + 2 * (OUTPUT + round(1.2 * 400)))]
    found = scan(messages, estimate_tokens_auto)
    assert found.model == ("anthropic", "claude-sonnet-4-5")
    assert [p.model[1] for p in found.pairs] == ["gpt-5.1-codex"] * 3 + ["claude-sonnet-4-5"] * 2
    assert calibrate(messages, estimate_tokens_auto) == Calibration(pytest.approx(1.2, abs=0.005), 2)


@pytest.mark.parametrize("stop_reason", ["aborted", "error"])
def test_an_aborted_or_failed_reply_breaks_the_chain(stop_reason: str) -> None:
    messages = conversation(1.5, 3)
    # The failed reply records no usable usage; the next good reply must not pair with the one before it.
    messages += [assistant("partial", stop_reason=stop_reason, usage=usage(input=99_999, output=1)),
                 user(sized(300)), reply(50_000), tool_result(sized(400)), reply(50_000 + OUTPUT + 600)]
    pairs = scan(messages, estimate_tokens_auto).pairs
    assert [round(p.reported / p.estimated, 2) for p in pairs] == [1.5, 1.5, 1.5]


def test_a_reply_without_usage_breaks_the_chain() -> None:
    messages = conversation(1.5, 3) + [reply(0), tool_result(sized(400)), reply(80_000)]
    assert len(scan(messages, estimate_tokens_auto).pairs) == 2


def test_an_outlier_pair_does_not_move_the_factor() -> None:
    messages = conversation(1.3, 5)
    # The provider dropped earlier thinking from the history: the next prompt is smaller than the last total.
    last = messages[-2]["usage"]["input"]
    messages += [user(sized(20)), reply(last - 800)]
    found = calibrate(messages, estimate_tokens_auto)
    assert found == Calibration(pytest.approx(1.3, abs=0.005), 4)


def test_usage_that_does_not_track_the_text_calibrates_nothing() -> None:
    pairs = [Pair(40_000, 400, ("p", "m"), 1), Pair(-9_000, 600, ("p", "m"), 2), Pair(500, 400, ("p", "m"), 3),
             Pair(450, 300, ("p", "m"), 4), Pair(70_000, 900, ("p", "m"), 5)]
    assert fit(pairs) == UNCALIBRATED  # two pairs agree, but they hold a third of the estimated tokens


def test_only_the_newest_replies_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibration, "MAX_PAIRS", 4)
    old = conversation(2.0, 6)
    last = old[-2]["usage"]["input"]
    new = [reply(last + OUTPUT + 800 + n * (OUTPUT + 480), tool_calls=[]) for n in range(5)]
    messages = [*old]
    for message in new:
        messages += [message, tool_result(sized(400))]
    found = calibrate(messages[:-1], estimate_tokens_auto)
    assert found == Calibration(pytest.approx(1.2, abs=0.005), 4)


def test_a_scan_carried_on_message_by_message_equals_a_scan_from_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibration, "MAX_PAIRS", 3)
    messages = conversation(1.4, 4) + [assistant("stopped", stop_reason="aborted"), user(sized(50))] \
        + conversation(1.1, 5, start=90_000)
    carried = None
    for end in range(1, len(messages) + 1):
        carried = scan(messages[:end], estimate_tokens_auto, since=carried)
        fresh = scan(messages[:end], estimate_tokens_auto)
        assert calibration.calibration_of(carried, messages[:end]) == calibration.calibration_of(fresh, messages[:end])


def test_the_calibrated_estimator_scales_each_estimate_and_nothing_learned_is_the_estimator_itself() -> None:
    message = tool_result(sized(1_000))
    assert calibrated(estimate_tokens_auto, UNCALIBRATED) is estimate_tokens_auto
    assert calibrated(estimate_tokens_auto, Calibration(1.31, 5))(message) == 1_310


def test_the_threshold_estimate_scales_only_what_follows_the_usage() -> None:
    messages = conversation(1.5, 4) + [user(sized(2_000))]
    scaled = calibrated(estimate_tokens_auto, calibrate(messages, estimate_tokens_auto))
    plain = context_usage(messages, estimate_tokens_auto)
    tuned = context_usage(messages, scaled)
    assert tuned.usage_tokens == plain.usage_tokens
    assert (plain.trailing_tokens, tuned.trailing_tokens) == (2_400, 3_600)


def test_a_malformed_usage_is_no_measurement() -> None:
    messages = conversation(1.5, 4)
    messages[3]["usage"] = {"input": "lots", "output": None, "totalTokens": 0}
    assert [p.index for p in scan(messages, estimate_tokens_auto).pairs] == [7]
