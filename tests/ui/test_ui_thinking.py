"""``/thinking``, the cycle key, the level in the status line, and what caching saved in ``/context`` and
``/session`` (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ui_harness import chat, info, make_state, squeeze

from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedModel
from pi_compact.ui.commands import dispatch
from pi_compact.ui.commands.thinking import cycle
from pi_compact.ui.status import context_report, session_table, status_text

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)


def _levels(path: Path) -> list[str]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [line["thinkingLevel"] for line in lines if line.get("type") == "thinking_level_change"]


def _started(project: Path) -> Any:
    state, buffer = make_state(project, ScriptedModel(SONNET, "hi"))
    chat(state, "Say hi.")  # the file exists from the first answer on
    return state, buffer


def test_thinking_without_argument_shows_the_level_and_the_model_levels(project: Path) -> None:
    state, buffer = _started(project)
    dispatch(state, "/thinking")
    assert "Thinking level medium; this model does off, minimal, low, medium, high." in squeeze(buffer)


def test_thinking_level_sets_it_and_writes_one_entry(project: Path) -> None:
    state, buffer = _started(project)
    dispatch(state, "/thinking high")
    assert state.session.thinking_level == "high"
    assert _levels(project / "s.jsonl") == ["medium", "high"]


def test_an_unknown_level_changes_nothing(project: Path) -> None:
    state, buffer = _started(project)
    dispatch(state, "/thinking extreme")
    assert "Unknown thinking level 'extreme'" in squeeze(buffer)
    assert _levels(project / "s.jsonl") == ["medium"]


def test_the_cycle_key_moves_to_the_next_level_and_writes_one_entry(project: Path) -> None:
    state, _buffer = _started(project)
    assert cycle(state) == "Thinking level high."
    assert _levels(project / "s.jsonl") == ["medium", "high"]


def test_the_cycle_key_on_a_model_that_cannot_think_says_so_and_writes_nothing(project: Path) -> None:
    state, _buffer = make_state(project, ScriptedModel(ModelInfo("openai/plain", "openai", 100_000, None), "hi"))
    chat(state, "Say hi.")
    assert cycle(state) == "This model does not think: the thinking level stays off."
    assert _levels(project / "s.jsonl") == ["off"]


def test_the_status_line_shows_a_level_other_than_off() -> None:
    assert "openai/gpt-4o · thinking medium · " in status_text(info(thinking="medium")).plain
    assert "thinking" not in status_text(info(thinking="off")).plain


def _cached_reply() -> dict[str, Any]:
    # 1,000 fresh input tokens at $3/M and 9,000 read from the cache at $0.30/M: the reads would have cost
    # $0.027 at the input price and cost $0.0027, so caching saved $0.0243.
    usage = {"input": 1000, "output": 10, "cacheRead": 9000, "cacheWrite": 500, "totalTokens": 10510,
             "cost": {"input": 0.003, "output": 0.00015, "cacheRead": 0.0027, "cacheWrite": 0.001875,
                      "total": 0.007725}}
    return {"role": "assistant", "content": [{"type": "text", "text": "cached"}], "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "stop",
            "timestamp": 1}


def test_context_shows_cache_reads_writes_and_the_saving(project: Path) -> None:
    state, buffer = _started(project)
    state.session.add_message(_cached_reply())
    state.console.print(context_report(state.session, "x"))
    assert "Cache 9,000 read · 500 written · saved $0.0243 (this session)" in squeeze(buffer)


def test_session_shows_cache_reads_writes_and_the_saving(project: Path) -> None:
    state, buffer = _started(project)
    state.session.add_message(_cached_reply())
    state.console.print(session_table(state.session.store, 0))
    assert "Cache 9,000 read · 500 written · saved $0.0243" in squeeze(buffer)
