"""Which compactions ask for the summary on the last chat request's prefix (``compaction.reusePrefix``,
issue 24): after a turn, with a caching provider or "always"; never for an overflow, with "never", or
without a caching provider under "auto". The entry written is the one pi reads either way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import (
    AGENT_SYSTEM,
    OVER_THRESHOLD,
    SETTINGS,
    SUMMARY,
    UNDER_THRESHOLD,
    ModelHarness,
    make_model_harness,
    padded,
    scripted_summary,
)

from pi_compact.compaction.prompts import SYSTEM_PROMPT, history_instruction, turn_instruction
from pi_compact.llm.scripted import ScriptedReply
from pi_compact.settings import Settings

OVERFLOW = ScriptedReply(error="prompt is too long: 12000 tokens > 10000 maximum", prompt_tokens=0)


def _with(mode: str) -> Settings:
    return replace(SETTINGS, compaction=replace(SETTINGS.compaction, reuse_prefix=mode))


def _crossing_the_threshold(tmp_path: Path, mode: str = "auto", caches: bool = True) -> ModelHarness:
    """Two turns, the second's reply crossing the threshold: a threshold compaction follows it."""
    h = make_model_harness(
        tmp_path,
        ScriptedReply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text=padded("ANSWER-TWO"), prompt_tokens=OVER_THRESHOLD),
        scripted_summary(), scripted_summary(),
        settings=_with(mode), prefix_by_default=caches,
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO"):
        h.session.prompt(padded(marker, 600))
    return h


def _summary_requests(h: ModelHarness) -> list[str]:
    """How each summary request was shaped: "prefix" (the agent's system prompt) or "serialized"."""
    chat = [r for r in h.model.history if r.system == AGENT_SYSTEM]
    shapes = []
    for request in h.model.history:
        if request.system == SYSTEM_PROMPT:
            shapes.append("serialized")
        elif request in chat and request.messages[-1]["content"][0]["text"] in (
                history_instruction(False, None), turn_instruction(None)):
            shapes.append("prefix")
    return shapes


def _compaction_details(h: ModelHarness) -> dict[str, object]:
    [entry] = [e for e in h.entries() if e["type"] == "compaction"]
    assert entry["summary"].startswith(SUMMARY) and set(entry) >= {"firstKeptEntryId", "tokensBefore", "details"}
    details: dict[str, object] = entry["details"]
    return details


def test_a_threshold_compaction_after_a_turn_asks_on_the_cached_prefix(tmp_path: Path) -> None:
    h = _crossing_the_threshold(tmp_path)
    assert _summary_requests(h) == ["prefix"]
    summary_request = h.model.history[-1]
    chat_request = h.model.history[-2]
    # The summary request repeats the chat request's start, as sent, with its tools.
    prefix = list(summary_request.messages[:-1])
    assert prefix == list(chat_request.messages[: len(prefix)]) and summary_request.tools == chat_request.tools
    asked = _compaction_details(h)["summaryRequest"]
    assert (asked["shape"], asked["prefixMessages"]) == ("prefix", len(prefix))
    assert asked["expectedInputTokens"]["prefix"] < asked["expectedInputTokens"]["serialized"]


def test_auto_does_not_reuse_where_the_provider_keeps_no_cache(tmp_path: Path) -> None:
    h = _crossing_the_threshold(tmp_path, caches=False)
    assert _summary_requests(h) == ["serialized"]
    assert "summaryRequest" not in _compaction_details(h)


def test_always_reuses_without_a_provider_cache(tmp_path: Path) -> None:
    h = _crossing_the_threshold(tmp_path, mode="always", caches=False)
    assert _summary_requests(h) == ["prefix"]


def test_never_keeps_the_serialized_request(tmp_path: Path) -> None:
    h = _crossing_the_threshold(tmp_path, mode="never")
    assert _summary_requests(h) == ["serialized"]


def test_a_manual_compact_after_a_turn_asks_on_the_prefix(tmp_path: Path) -> None:
    h = make_model_harness(
        tmp_path,
        ScriptedReply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text=padded("ANSWER-TWO"), prompt_tokens=UNDER_THRESHOLD),
        scripted_summary(), settings=_with("auto"), prefix_by_default=True,
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO"):
        h.session.prompt(padded(marker, 600))
    assert h.session.compact() is not None
    assert _summary_requests(h) == ["prefix"]


def test_an_overflow_compaction_keeps_the_serialized_request(tmp_path: Path) -> None:
    h = make_model_harness(
        tmp_path,
        ScriptedReply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        OVERFLOW, scripted_summary(), ScriptedReply(text="after the retry", prompt_tokens=UNDER_THRESHOLD),
        settings=_with("always"), prefix_by_default=True,
    )
    h.session.prompt(padded("QUESTION-ONE", 600))
    h.session.prompt(padded("QUESTION-TWO", 600))
    assert [e.reason for e in h.of_type("compaction_start")] == ["overflow"]
    assert _summary_requests(h) == ["serialized"]


def test_a_tool_call_on_the_prefix_falls_back_and_the_compaction_still_lands(tmp_path: Path) -> None:
    from pi_compact.llm.scripted import ScriptedCall

    h = make_model_harness(
        tmp_path,
        ScriptedReply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text=padded("ANSWER-TWO"), prompt_tokens=OVER_THRESHOLD),
        ScriptedReply(tool_calls=(ScriptedCall("read", {"path": "x.py"}),)), scripted_summary(),
        settings=_with("auto"), prefix_by_default=True,
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO"):
        h.session.prompt(padded(marker, 600))
    assert _summary_requests(h) == ["prefix", "serialized"]
    details = _compaction_details(h)
    assert (details["summaryRequest"]["shape"], details["summaryRequest"]["prefixNotUsed"]) == (
        "serialized", "the model called a tool instead of writing the summary")
    assert not (h.cwd / "x.py").exists() and len([r for r in h.model.history if r.tools]) == 3  # the call never ran


def test_after_a_model_switch_the_summary_is_not_asked_on_the_old_models_prefix(tmp_path: Path) -> None:
    from agent_harness import CachingScriptedModel

    from pi_compact.llm.protocol import ModelInfo

    h = make_model_harness(
        tmp_path,
        ScriptedReply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text=padded("ANSWER-TWO"), prompt_tokens=UNDER_THRESHOLD),
        settings=_with("always"), prefix_by_default=True,
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO"):
        h.session.prompt(padded(marker, 600))
    other = CachingScriptedModel(ModelInfo("openai/other", "openai", 10_000, None), scripted_summary())
    h.session.set_model(other)
    assert h.session.compact() is not None
    assert [r.system for r in other.history] == [SYSTEM_PROMPT]
