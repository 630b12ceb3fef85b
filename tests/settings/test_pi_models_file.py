"""pi's models.json is read as pi reads it: its documented examples load, a file pi refuses is ignored whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_compact.model_facts import Compat
from pi_compact.settings.files import load_settings
from pi_compact.settings.pi_models import parse_pi_models, read_pi_models

MINIMAL = {"providers": {"ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                                    "apiKey": "ollama", "models": [{"id": "llama3.1:8b"}, {"id": "qwen2.5-coder:7b"}]}}}
FULL = {"providers": {"ollama": {
    "baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama",
    "models": [{"id": "llama3.1:8b", "name": "Llama 3.1 8B (Local)", "reasoning": False, "input": ["text"],
                "contextWindow": 128000, "maxTokens": 32000,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}
COMPAT = {"providers": {"ollama": {
    "baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama",
    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
    "models": [{"id": "gpt-oss:20b", "reasoning": True}]}}}
OVERRIDE = {"providers": {"anthropic": {"baseUrl": "https://my-proxy.example.com/v1"}}}


def parsed(tree: object) -> tuple:
    return parse_pi_models(json.dumps(tree), "models.json")


def test_the_minimal_example_declares_two_models_with_pis_default_window_and_output_cap() -> None:
    models, warnings = parsed(MINIMAL)
    assert warnings == []
    assert [m.id for m in models.models] == ["llama3.1:8b", "qwen2.5-coder:7b"]
    first = models.model("ollama", "qwen2.5-coder:7b")
    assert first is not None
    assert (first.base_url, first.api, first.api_key) == ("http://localhost:11434/v1", "openai-completions", "ollama")
    assert (first.context_window, first.max_tokens, first.reasoning) == (128_000, 16_384, False)


def test_the_full_example_keeps_its_window_output_cap_and_prices() -> None:
    models, _ = parsed(FULL)
    model = models.model("ollama", "llama3.1:8b")
    assert model is not None
    assert (model.context_window, model.max_tokens) == (128_000, 32_000)
    assert dict(model.cost) == {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}


def test_provider_compat_reaches_its_models_and_a_models_own_compat_wins() -> None:
    tree = json.loads(json.dumps(COMPAT))
    tree["providers"]["ollama"]["models"].append({"id": "other", "compat": {"supportsDeveloperRole": True}})
    models, _ = parsed(tree)
    first, other = models.model("ollama", "gpt-oss:20b"), models.model("ollama", "other")
    assert first is not None and other is not None
    assert first.compat == Compat(supports_developer_role=False, supports_reasoning_effort=False)
    assert other.compat == Compat(supports_developer_role=True, supports_reasoning_effort=False)


def test_a_built_in_provider_override_holds_only_its_base_url() -> None:
    models, warnings = parsed(OVERRIDE)
    assert warnings == [] and models.models == ()
    assert models.provider("anthropic").base_url == "https://my-proxy.example.com/v1"  # type: ignore[union-attr]


def test_a_custom_model_of_a_built_in_provider_takes_that_providers_api() -> None:
    models, warnings = parsed({"providers": {"anthropic": {"models": [{"id": "claude-next"}]}}})
    assert warnings == []
    assert models.model("anthropic", "claude-next").api == "anthropic-messages"  # type: ignore[union-attr]


@pytest.mark.parametrize(("tree", "words"), [
    ({"providers": {"lab": {"api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}}},
     'provider lab: "baseUrl" is required when defining custom models'),
    ({"providers": {"lab": {"baseUrl": "http://x/v1", "api": "openai-completions", "models": [{"id": "m"}]}}},
     'provider lab: "apiKey" is required when defining custom models'),
    ({"providers": {"lab": {"baseUrl": "http://x/v1", "apiKey": "k", "models": [{"id": "m"}]}}},
     'provider lab, model m: no "api" specified'),
    ({"providers": {"lab": {"baseUrl": "http://x/v1", "apiKey": "k", "api": "openai-completions",
                            "models": [{"id": "m", "contextWindow": 0}]}}},
     "provider lab, model m: invalid contextWindow"),
    ({"providers": {"lab": {}}}, 'provider lab: must specify "baseUrl"'),
])
def test_a_file_pi_refuses_is_ignored_whole_with_one_warning_naming_the_file(tree: object, words: str) -> None:
    models, warnings = parsed(tree)
    assert models.models == () and models.providers == ()
    assert len(warnings) == 1 and warnings[0].startswith("Ignoring models.json: ") and words in warnings[0]


def test_line_comments_are_stripped_but_not_inside_strings() -> None:
    text = '{\n // local models\n "providers": {"ollama": {"baseUrl": "http://h//v1", // mine\n "api": ' \
           '"openai-completions", "apiKey": "ollama", "models": [{"id": "a"}]}}}'
    models, warnings = parse_pi_models(text, "models.json")
    assert warnings == []
    assert models.model("ollama", "a").base_url == "http://h//v1"  # type: ignore[union-attr]


def test_trailing_commas_are_accepted_as_pi_accepts_them() -> None:
    text = '{"providers": {"ollama": {"baseUrl": "http://h/v1", "api": "openai-completions", "apiKey": "k,]",\n' \
           '  "models": [{"id": "a",}, {"id": "b"} ,\n\t],},},}'
    models, warnings = parse_pi_models(text, "models.json")
    assert warnings == []
    assert [m.id for m in models.models] == ["a", "b"]
    assert models.model("ollama", "a").api_key == "k,]"  # type: ignore[union-attr]


def test_a_block_comment_makes_pi_ignore_the_file_and_so_do_we() -> None:
    text = '{"providers": {/* mine */ "ollama": {"baseUrl": "http://h/v1", "api": "openai-completions", ' \
           '"apiKey": "k", "models": [{"id": "a"}]}}}'
    models, warnings = parse_pi_models(text, "models.json")
    assert models.models == ()
    assert warnings == ["Ignoring models.json: invalid JSON at line 1, column 16 (Expecting property name enclosed "
                        "in double quotes) (pi reads // comments, not /* */); pi ignores it too: fix it or delete it."]


@pytest.mark.parametrize("text", ['\ufeff{"providers": {}}', '{"providers": {"o": {"baseUrl": "http://h/v1", '
                                  '"models": [{"id": "a", "contextWindow": NaN}]}}}', '[1,,]'])
def test_what_json_parse_refuses_is_refused(text: str) -> None:
    models, warnings = parse_pi_models(text, "models.json")
    assert models.providers == () and len(warnings) == 1 and "invalid JSON" in warnings[0]


def test_a_file_with_a_byte_order_mark_is_ignored_as_pi_ignores_it(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(MINIMAL).encode())
    models, warnings = read_pi_models(path)
    assert models.models == () and len(warnings) == 1 and "Unexpected UTF-8 BOM" in warnings[0]


def test_invalid_json_is_one_warning_with_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"providers": {"a" 1}}')
    models, warnings = read_pi_models(path)
    assert models.models == ()
    assert warnings == [f"Ignoring {path}: invalid JSON at line 1, column 20 (Expecting ':' delimiter); pi ignores "
                        "it too: fix it or delete it."]


def test_load_settings_reads_the_agent_dirs_models_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps(MINIMAL))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    project = tmp_path / "project"
    project.mkdir()
    loaded = load_settings(project)
    assert loaded.settings.pi_models.path == str(agent / "models.json")
    assert loaded.settings.pi_models.model("ollama", "llama3.1:8b") is not None


def test_a_project_cannot_declare_models_through_a_models_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "models.json").write_text(json.dumps(MINIMAL))
    assert load_settings(project).settings.pi_models.models == ()


def test_overflow_texts_of_the_provider_reach_each_model_after_the_models_own() -> None:
    tree = json.loads(json.dumps(MINIMAL))
    tree["providers"]["ollama"]["overflowTexts"] = ["prompt exceeds num_ctx"]
    tree["providers"]["ollama"]["models"][0]["overflowTexts"] = ["llama says too long"]
    models, warnings = parsed(tree)
    assert warnings == []
    assert models.model("ollama", "llama3.1:8b").overflow_texts == (  # type: ignore[union-attr]
        "llama says too long", "prompt exceeds num_ctx")


def test_a_settings_models_entry_takes_overflow_texts_and_refuses_a_non_list(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"models": {
        "openai/a": {"overflowTexts": ["context full"]}, "openai/b": {"overflowTexts": "context full"}}}))
    loaded = load_settings(tmp_path)
    assert loaded.settings.model_override("openai/a").overflow_texts == ("context full",)  # type: ignore[union-attr]
    assert any('models["openai/b"].overflowTexts' in w for w in loaded.warnings)
