"""Model facts read from litellm's bundled map without importing litellm equal litellm's own answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_compact.llm import model_map
from pi_compact.llm.litellm_model import _litellm
from pi_compact.llm.model_map import UNKNOWN, ModelFacts, facts_from_info

# Names no map entry has: litellm answers them from its capability rules, or not at all.
UNMAPPED = ("x", "bench", "my-local-model", "claude-opus-9-9", "gpt-9o", "gpt-4o-2031-01-01", "GPT-4O",
            "qwen3-coder-30b", "gemini-9.0-pro", "o3-mini", "ft:gpt-4o-mini:org:suffix:id", "llama-3.3-70b-versatile",
            "deepseek-reasoner-v9", "anthropic/claude-sonnet-4-5", "grok-9", "claude-sonnet-4-5-20250929")


def litellm_facts(model: str) -> ModelFacts:
    try:
        return facts_from_info(_litellm().get_model_info(model))
    except Exception:  # not mapped
        return UNKNOWN


def model_strings() -> list[str]:
    """Every map entry of the providers ``model_map`` answers for, as ``provider/name``, plus unmapped names."""
    path = model_map.bundled_map_path()
    assert path is not None
    raw = json.loads(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for key, entry in raw.items():
        if not isinstance(entry, dict):
            continue
        for provider in sorted(model_map.SIMPLE_PROVIDERS):
            if key.startswith(provider + "/"):
                names.append(key)
            elif entry.get("litellm_provider") == provider:
                names.append(f"{provider}/{key}")
    names += [f"{provider}/{name}" for provider in sorted(model_map.SIMPLE_PROVIDERS) for name in UNMAPPED]
    return names


def test_every_entry_of_the_simple_providers_matches_litellm() -> None:
    names = model_strings()
    assert len(names) > 1500  # the map really was read
    mismatches = {}
    for name in names:
        ours = model_map.lookup(name)
        assert ours is not None, name
        theirs = litellm_facts(name)
        if ours != theirs:
            mismatches[name] = (ours, theirs)
    assert mismatches == {}


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5", "bedrock/anthropic.claude-v2",
                                   "vertex_ai/gemini-2.5-pro", "ollama/llama3", "my-proxy/some-model"])
def test_names_it_cannot_answer_exactly_are_left_to_litellm(model: str) -> None:
    assert model_map.lookup(model) is None


def test_a_known_model_has_its_window_output_reasoning_and_prices() -> None:
    facts = model_map.lookup("anthropic/claude-sonnet-4-5")
    assert facts == litellm_facts("anthropic/claude-sonnet-4-5")
    assert facts is not None and facts.context_window == 200000 and facts.reasoning
    assert facts.costs["input"] > 0


def test_an_unknown_local_model_is_unknown() -> None:
    assert model_map.lookup("openai/my-local-model") == UNKNOWN


def test_a_downloaded_map_is_left_to_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    assert model_map.lookup("openai/gpt-4o") is None


def test_catalog_models_are_told_apart_from_other_names() -> None:
    assert model_map.is_openai_catalog_model("gpt-4o") is True
    assert model_map.is_openai_catalog_model("o3-mini") is True
    assert model_map.is_openai_catalog_model("my-local-model") is False


def test_reading_the_map_does_not_import_litellm() -> None:
    code = (
        "import sys\n"
        "from pi_compact.llm import model_map\n"
        "facts = model_map.lookup('openai/gpt-4o')\n"
        "assert facts is not None and facts.context_window, facts\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'litellm'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).resolve().parents[2])
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr
