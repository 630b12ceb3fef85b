"""Which models have their provider's own compaction: a field of the provider row (Anthropic's for the models
litellm's map marks, OpenAI's for every model of its Responses endpoint) and of a models.json model
(``serverCompaction``), resolved into ``ModelInfo.server_compaction``; and the Claude 4.6/4.7 facts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_compact import providers
from pi_compact.llm import model_map
from pi_compact.llm.resolve import resolve_model
from pi_compact.settings import Settings
from pi_compact.settings.pi_models import parse_pi_models

ANTHROPIC = providers.ANTHROPIC_COMPACTION
OPENAI = providers.OPENAI_COMPACTION


def with_models_json(tree: dict[str, Any]) -> Settings:
    pi_models, warnings = parse_pi_models(json.dumps(tree), "models.json")
    assert warnings == []
    return Settings(pi_models=pi_models)


@pytest.mark.parametrize(("model", "window", "output", "prices"), [
    ("anthropic/claude-sonnet-4-6", 1_000_000, 128_000, (3.0, 15.0)),
    ("anthropic/claude-opus-4-6", 1_000_000, 128_000, (5.0, 25.0)),
    ("anthropic/claude-opus-4-7", 1_000_000, 128_000, (5.0, 25.0)),
])
def test_claude_4_6_and_4_7_are_known_with_server_compaction(
    model: str, window: int, output: int, prices: tuple[float, float]
) -> None:
    info = resolve_model(model, settings=Settings())
    assert (info.context_window, info.max_output_tokens, info.reasoning) == (window, output, True)
    assert info.server_compaction == ANTHROPIC
    facts = model_map.lookup(model)
    assert facts is not None and (facts.costs["input"] * 1e6, facts.costs["output"] * 1e6) == pytest.approx(prices)


def test_an_anthropic_model_the_map_does_not_mark_has_none() -> None:
    assert resolve_model("anthropic/claude-sonnet-4-5", settings=Settings()).server_compaction is None


def test_openai_models_have_the_compact_endpoint() -> None:
    assert resolve_model("openai/gpt-5.1", settings=Settings()).server_compaction == OPENAI


def test_a_provider_without_its_own_compaction_has_none() -> None:
    assert resolve_model("gemini/gemini-2.5-pro", settings=Settings()).server_compaction is None


def test_the_capability_is_a_field_of_the_provider_rows() -> None:
    assert providers.by_prefix("anthropic").server_compaction == ANTHROPIC
    assert providers.by_prefix("anthropic").compaction_by_model is True
    assert providers.by_prefix("openai").server_compaction == OPENAI
    assert providers.by_prefix("deepseek").server_compaction is None


@pytest.mark.parametrize(("api", "expected"), [
    ("anthropic-messages", ANTHROPIC), ("openai-responses", OPENAI), ("openai-completions", None)])
def test_a_models_json_model_marked_server_compaction_gets_its_apis(api: str, expected: str | None) -> None:
    settings = with_models_json({"providers": {"lab": {
        "baseUrl": "http://127.0.0.1:9", "api": api, "apiKey": "k",
        "models": [{"id": "lab-model", "serverCompaction": True}]}}})
    assert resolve_model("lab/lab-model", settings=settings).server_compaction == expected


def test_a_models_json_model_not_marked_has_none() -> None:
    settings = with_models_json({"providers": {"lab": {
        "baseUrl": "http://127.0.0.1:9", "api": "anthropic-messages", "apiKey": "k", "models": [{"id": "lab-model"}]}}})
    assert resolve_model("lab/lab-model", settings=settings).server_compaction is None


def test_a_model_override_turns_it_off_for_a_built_in_model() -> None:
    settings = with_models_json({"providers": {"anthropic": {
        "modelOverrides": {"claude-sonnet-4-6": {"serverCompaction": False}}}}})
    assert resolve_model("anthropic/claude-sonnet-4-6", settings=settings).server_compaction is None


def test_a_model_override_turns_it_on_for_a_model_the_map_does_not_mark() -> None:
    settings = with_models_json({"providers": {"anthropic": {
        "modelOverrides": {"claude-sonnet-4-5": {"serverCompaction": True}}}}})
    assert resolve_model("anthropic/claude-sonnet-4-5", settings=settings).server_compaction == ANTHROPIC


def test_a_server_compaction_that_is_not_a_boolean_makes_the_file_ignored_with_a_warning() -> None:
    tree = {"providers": {"lab": {"baseUrl": "http://x", "api": "anthropic-messages", "apiKey": "k",
                                  "models": [{"id": "m", "serverCompaction": "yes"}]}}}
    models, warnings = parse_pi_models(json.dumps(tree), "/home/u/.pi/agent/models.json")
    assert models.models == () and len(warnings) == 1
    assert '"serverCompaction" must be true or false' in warnings[0]
