"""Usage arithmetic and how costs read: sums in pi's shape, totals over a session's entries, "cost unknown"."""

from __future__ import annotations

from typing import Any

from builders import usage

from pi_compact.usage import add_usage, cache_saving, cost_text, dollars, session_totals


def priced(input: int, output: int, total: float) -> dict[str, Any]:
    return {**usage(input, output), "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0,
                                            "total": total}}


def reply_entry(recorded: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "assistant", "content": [], "usage": recorded}}


def test_adding_usages_sums_counts_and_every_cost_part() -> None:
    total = add_usage(priced(100, 10, 0.5), {**usage(50, 5, cache_read=20), "cost": {"cacheRead": 0.25, "total": 0.25}})
    assert {k: total[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == {
        "input": 150, "output": 15, "cacheRead": 20, "cacheWrite": 0, "totalTokens": 185}
    assert total["cost"] == {"input": 0.0, "output": 0.0, "cacheRead": 0.25, "cacheWrite": 0.0, "total": 0.75}


def test_a_usage_with_tokens_and_no_price_reads_cost_unknown_never_zero_dollars() -> None:
    assert cost_text(priced(1_000, 50, 0.0)) == "cost unknown"
    assert cost_text(priced(1_000, 50, 0.0031)) == "$0.0031"


def test_dollars_keep_small_costs_visible_and_large_ones_short() -> None:
    assert [dollars(c) for c in (0.00001, 0.00018, 0.4210, 12.404)] == ["<$0.0001", "$0.0002", "$0.4210", "$12.40"]


def test_session_totals_add_replies_and_compactions_and_skip_malformed_usage() -> None:
    entries = [
        reply_entry(priced(1_000, 100, 0.002)),
        {"type": "compaction", "details": {"usage": priced(3_000, 200, 0.001)}},
        reply_entry("not a usage"),
        reply_entry({"input": "many", "output": None}),
        {"type": "message", "message": {"role": "user", "content": "hi"}},
    ]
    totals = session_totals(entries)
    assert (totals.usage["input"], totals.usage["output"], totals.calls, totals.unpriced) == (4_000, 300, 2, 0)
    assert totals.cost_text() == "$0.0030"


def test_session_totals_say_which_part_had_no_price() -> None:
    some = session_totals([reply_entry(priced(1_000, 100, 0.002)), reply_entry(priced(500, 10, 0.0))])
    assert some.cost_text() == "$0.0020 (some calls unpriced)"
    none = session_totals([reply_entry(priced(500, 10, 0.0))])
    assert none.cost_text() == "unknown (no price is known for the models used)"


def cached(input: int, cache_read: int, input_cost: float, read_cost: float) -> dict[str, Any]:
    return {**usage(input, 10, cache_read=cache_read), "cost": {"input": input_cost, "output": 0.0,
                                                              "cacheRead": read_cost, "cacheWrite": 0.0,
                                                              "total": input_cost + read_cost}}


def test_cache_saving_is_the_reads_at_the_input_price_minus_their_cost() -> None:
    # $3/M input, $0.30/M reads: 9,000 reads would have cost $0.027 and cost $0.0027.
    assert abs(cache_saving(cached(1_000, 9_000, 0.003, 0.0027)) - 0.0243) < 1e-12


def test_cache_saving_is_zero_without_fresh_input_or_a_price() -> None:
    assert cache_saving(cached(0, 9_000, 0.0, 0.0027)) == 0.0
    assert cache_saving(cached(1_000, 9_000, 0.0, 0.0)) == 0.0


def test_session_totals_add_up_the_savings() -> None:
    entries = [reply_entry(cached(1_000, 9_000, 0.003, 0.0027)), reply_entry(cached(1_000, 9_000, 0.003, 0.0027))]
    totals = session_totals(entries)
    assert abs(totals.saved - 0.0486) < 1e-12
    assert totals.cache_text() == "18,000 read · 0 written · saved $0.0486"


def test_the_embedded_local_model_is_free_not_unpriced() -> None:
    local = {"type": "message", "message": {"role": "assistant", "content": [], "provider": "local",
                                            "usage": priced(2_000, 100, 0.0)}}
    summary = {"type": "compaction", "details": {"usage": priced(3_000, 200, 0.0)}}  # written by the chat model
    totals = session_totals([local, summary])
    assert (totals.calls, totals.free, totals.unpriced) == (2, 2, 0)
    assert totals.cost_text() == "free (the embedded local model)"
    mixed = session_totals([reply_entry(priced(1_000, 100, 0.002)), local])
    assert mixed.cost_text() == "$0.0020 (1 local model call, free)"

