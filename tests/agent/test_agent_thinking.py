"""The session's thinking level (issue 21): which level a session starts at, how it is clamped to the model
(one notice), the ``thinking_level_change`` entries it writes and reads, and what every request carries."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, make_model_harness, padded, scripted_summary

from pi_compact.agent.compaction.summarizer import summary_reasoning
from pi_compact.agent.events import Notice
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedModel
from pi_compact.session.store import SessionStore

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
PLAIN = ModelInfo("openai/scripted", "openai", 100_000, None)  # cannot think


def _levels_in_file(path: Path) -> list[str]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [line["thinkingLevel"] for line in lines if line.get("type") == "thinking_level_change"]


def _notices(events: list[object]) -> list[str]:
    return [event.text for event in events if isinstance(event, Notice) and "Thinking level" in event.text]


def test_a_reasoning_model_runs_pi_default_medium(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "hi", info=SONNET)
    h.session.prompt("Say hi.")
    assert h.model.history[-1].thinking == "medium"
    assert _levels_in_file(h.path) == ["medium"]


def test_a_model_that_cannot_think_runs_off_without_a_notice(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "hi", info=PLAIN)
    h.session.prompt("Say hi.")
    assert h.model.history[-1].thinking == "off"
    assert _levels_in_file(h.path) == ["off"] and _notices(h.events) == []


def test_the_flag_level_is_sent(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "hi", info=SONNET, thinking="low")
    h.session.prompt("Say hi.")
    assert h.model.history[-1].thinking == "low" and _levels_in_file(h.path) == ["low"]


def test_default_thinking_level_setting_applies(tmp_path: Path) -> None:
    settings = replace(SETTINGS, default_thinking_level="high")
    h = make_model_harness(tmp_path, "hi", info=SONNET, settings=settings)
    h.session.prompt("Say hi.")
    assert h.model.history[-1].thinking == "high"


def test_a_level_the_model_cannot_do_is_clamped_with_one_notice(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "one", "two", info=SONNET, thinking="xhigh")  # Sonnet 4.5 stops at high
    h.session.prompt("First.")
    h.session.prompt("Second.")
    assert [request.thinking for request in h.model.history] == ["high", "high"]
    assert _notices(h.events) == [
        "Thinking level xhigh is not available on claude-sonnet-4-5 (it does off, minimal, low, medium, high); "
        "using high."]
    assert _levels_in_file(h.path) == ["high"]


def test_every_request_carries_cache_retention_and_the_session_id(tmp_path: Path) -> None:
    settings = replace(SETTINGS, cache_retention="long")
    h = make_model_harness(tmp_path, "hi", info=SONNET, settings=settings)
    h.session.prompt("Say hi.")
    request = h.model.history[-1]
    assert (request.cache, request.session_id) == ("long", h.session.store.session_id)


def test_a_resumed_session_keeps_its_recorded_level(tmp_path: Path) -> None:
    first = make_model_harness(tmp_path, "hi", info=SONNET, thinking="minimal")
    first.session.prompt("Say hi.")
    first.session.close()
    store = SessionStore.open(first.path, str(first.cwd), 0)
    again = make_model_harness(tmp_path, "again", info=SONNET, store=store)
    again.session.prompt("Once more.")
    assert again.model.history[-1].thinking == "minimal"
    assert _levels_in_file(first.path) == ["minimal"]  # nothing new: the level did not change


def test_the_flag_wins_over_a_resumed_level_and_is_recorded_once(tmp_path: Path) -> None:
    first = make_model_harness(tmp_path, "hi", info=SONNET, thinking="minimal")
    first.session.prompt("Say hi.")
    first.session.close()
    store = SessionStore.open(first.path, str(first.cwd), 0)
    again = make_model_harness(tmp_path, "a", "b", info=SONNET, store=store, thinking="high")
    again.session.prompt("One.")
    again.session.prompt("Two.")
    assert [r.thinking for r in again.model.history] == ["high", "high"]
    assert _levels_in_file(first.path) == ["minimal", "high"]


def test_set_thinking_level_writes_one_entry_per_change(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "hi", "again", info=SONNET)
    h.session.prompt("Say hi.")
    h.session.set_thinking_level("high")
    h.session.set_thinking_level("high")  # no change: no entry
    h.session.prompt("Again.")
    assert h.model.history[-1].thinking == "high"
    assert _levels_in_file(h.path) == ["medium", "high"]


def test_cycle_goes_through_the_model_levels_and_wraps(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "hi", info=SONNET, thinking="high")
    h.session.prompt("Say hi.")
    assert [h.session.cycle_thinking_level() for _ in range(2)] == ["off", "minimal"]
    assert _levels_in_file(h.path) == ["high", "off", "minimal"]


def test_a_model_switch_reclamps_with_one_notice_and_restores_the_choice(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "hi", info=SONNET, thinking="high")
    h.session.prompt("Say hi.")
    h.session.set_model(ScriptedModel(PLAIN))
    assert h.session.thinking_level == "off"
    h.session.set_model(ScriptedModel(SONNET))
    assert h.session.thinking_level == "high"  # what the user chose comes back on a model that can do it
    assert len(_notices(h.events)) == 1
    assert _levels_in_file(h.path) == ["high", "off", "high"]


def test_a_summary_reasons_at_the_session_level(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "one", "two", scripted_summary(), info=SONNET, thinking="low")
    h.session.prompt(padded("first", 300))
    h.session.prompt(padded("second", 300))
    assert h.session.compact() is not None
    summary = [request for request in h.model.history if not request.tools]
    assert summary and all(request.thinking_level == "low" for request in summary)


def test_summary_reasoning_is_none_when_off_or_the_model_cannot_think() -> None:
    assert summary_reasoning(SONNET, "off") is None
    assert summary_reasoning(PLAIN, "high") is None
    assert summary_reasoning(SONNET, "xhigh") == "high"
