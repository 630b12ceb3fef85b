"""Models of pi's models.json drive real requests: to its baseUrl, with its key, worded as pi words them.

The same models.json is given to pi 0.73.1 (when installed) and to pi-compact against one scripted server:
both must send the system prompt in the same role and ``reasoning_effort`` in the same cases.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes.pi_probe import PI_CLI, pi_installed
from scripted_server import Reply, ScriptedServer

from pi_compact.errors import ConfigError
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.protocol import ChatRequest, Done
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.settings import ModelOverride, Settings
from pi_compact.settings.pi_models import parse_pi_models

USER = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}


def models_json(base_url: str, *, reasoning: bool, compat: dict[str, bool] | None = None,
                api_key: str = "sk-lab") -> dict[str, Any]:
    provider: dict[str, Any] = {"baseUrl": base_url, "api": "openai-completions", "apiKey": api_key,
                                "models": [{"id": "lab-model", "reasoning": reasoning, "contextWindow": 32000,
                                            "maxTokens": 4096}]}
    if compat is not None:
        provider["compat"] = compat
    return {"providers": {"lab": provider}}


def settings_for(tree: dict[str, Any], **extra: Any) -> Settings:
    pi_models, warnings = parse_pi_models(json.dumps(tree), "models.json")
    assert warnings == []
    return Settings(pi_models=pi_models, **extra)


def ask_ours(settings: Settings, thinking: str | None = "medium") -> dict[str, Any]:
    info = resolve_model("lab/lab-model", settings=settings)
    model = create_model(info, settings=settings)
    events = list(model.stream(ChatRequest(system="You are terse.", messages=[USER], thinking=thinking)))
    done = events[-1]
    assert isinstance(done, Done) and done.message["stopReason"] == "stop", done
    return done.message


def test_a_models_json_model_is_resolved_with_its_window_and_output_cap() -> None:
    info = resolve_model("lab/lab-model", settings=settings_for(models_json("http://h/v1", reasoning=True)))
    assert (info.provider, info.model_id, info.context_window, info.max_output_tokens, info.reasoning) == (
        "lab", "lab-model", 32000, 4096, True)
    assert info.window_source == "models.json" and info.api == "openai-completions"


def test_our_own_models_setting_and_the_flag_win_over_models_json() -> None:
    settings = settings_for(models_json("http://h/v1", reasoning=False),
                            models=(("lab/lab-model", ModelOverride(context_window=20000, max_tokens=1000)),))
    info = resolve_model("lab/lab-model", settings=settings)
    assert (info.context_window, info.max_output_tokens, info.window_source) == (20000, 1000, "settings")
    assert resolve_model("lab/lab-model", context_window=9000, settings=settings).context_window == 9000


def test_requests_go_to_its_base_url_with_its_key_and_its_id(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="ok"))
    settings = settings_for(models_json(scripted_server.base_url, reasoning=False))
    assert isinstance(create_model(resolve_model("lab/lab-model", settings=settings), settings=settings),
                      OpenAICompatModel)
    message = ask_ours(settings)
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-lab"
    assert scripted_server.requests[0]["model"] == "lab-model"
    assert (message["provider"], message["model"], message["api"]) == ("lab", "lab-model", "openai-completions")


def test_an_api_key_naming_a_set_variable_sends_its_value(scripted_server: ScriptedServer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_KEY", "sk-from-env")
    scripted_server.enqueue(Reply(text="ok"))
    ask_ours(settings_for(models_json(scripted_server.base_url, reasoning=False, api_key="LAB_KEY")))
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-from-env"


def test_an_api_key_command_sends_its_output(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="ok"))
    ask_ours(settings_for(models_json(scripted_server.base_url, reasoning=False, api_key="!echo sk-from-command")))
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-from-command"


def test_a_failing_api_key_command_is_one_sentence_naming_the_provider(scripted_server: ScriptedServer) -> None:
    settings = settings_for(models_json(scripted_server.base_url, reasoning=False, api_key="!exit 3"))
    with pytest.raises(ConfigError,
                       match=r"The apiKey command of provider lab in models.json `exit 3` failed \(exit 3\)"):
        create_model(resolve_model("lab/lab-model", settings=settings), settings=settings)


def test_a_built_in_providers_base_url_override_moves_its_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_compact.llm.litellm_model import LiteLLMModel

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    settings = settings_for({"providers": {"anthropic": {"baseUrl": "http://127.0.0.1:9/proxy"}}})
    model = create_model(resolve_model("anthropic/claude-sonnet-4-5", settings=settings), settings=settings)
    assert isinstance(model, LiteLLMModel) and model.endpoint == "http://127.0.0.1:9/proxy"


# ---- the same models.json given to pi and to pi-compact ------------------------------------------------
CASES = [
    pytest.param(False, None, id="plain-model"),
    pytest.param(True, None, id="reasoning-model-default-compat"),
    pytest.param(True, {"supportsDeveloperRole": False, "supportsReasoningEffort": False}, id="reasoning-compat-off"),
    pytest.param(True, {"supportsDeveloperRole": False}, id="reasoning-system-role-only"),
]


def wording(body: dict[str, Any]) -> tuple[str, bool]:
    return body["messages"][0]["role"], "reasoning_effort" in body


@pytest.mark.parametrize(("reasoning", "compat"), CASES)
def test_our_requests_are_worded_by_pis_rules(scripted_server: ScriptedServer, reasoning: bool,
                                             compat: dict[str, bool] | None) -> None:
    scripted_server.enqueue(Reply(text="ok"))
    ask_ours(settings_for(models_json(scripted_server.base_url, reasoning=reasoning, compat=compat)))
    developer = reasoning and (compat or {}).get("supportsDeveloperRole", True)
    effort = reasoning and (compat or {}).get("supportsReasoningEffort", True)
    assert wording(scripted_server.requests[0]) == ("developer" if developer else "system", effort)


@pytest.mark.skipif(not pi_installed(), reason=f"pi 0.73.1 is not installed at {PI_CLI} (npm install)")
@pytest.mark.parametrize(("reasoning", "compat"), CASES)
def test_pi_and_pi_compact_send_the_same_base_url_role_and_effort(
    scripted_server: ScriptedServer, tmp_path: Path, reasoning: bool, compat: dict[str, bool] | None
) -> None:
    tree = models_json(scripted_server.base_url, reasoning=reasoning, compat=compat)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps(tree))
    (agent / "settings.json").write_text(json.dumps({"quietStartup": True, "retry": {"enabled": False}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "OPENAI_", "ANTHROPIC_"))}
    env.update(HOME=str(tmp_path), PI_CODING_AGENT_DIR=str(agent), PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1")
    scripted_server.enqueue(Reply(text="ok"), Reply(text="ok"))
    done = subprocess.run(
        ["node", str(PI_CLI), "--provider", "lab", "--model", "lab-model", "--thinking", "medium", "--no-session",
         "--no-extensions", "--no-skills", "--no-context-files", "-p", "hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    ask_ours(settings_for(tree))
    pi_body, our_body = scripted_server.requests
    assert wording(our_body) == wording(pi_body)
    assert scripted_server.request_headers[1]["authorization"] == scripted_server.request_headers[0]["authorization"]


def test_a_models_json_cost_prices_the_reply(scripted_server: ScriptedServer) -> None:
    tree = models_json(scripted_server.base_url, reasoning=False)
    tree["providers"]["lab"]["models"][0]["cost"] = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
    scripted_server.enqueue(Reply(text="ok", prompt_tokens=1_000_000, completion_tokens=100_000))
    message = ask_ours(settings_for(tree))
    assert message["usage"]["cost"]["input"] == pytest.approx(3.0)
    assert message["usage"]["cost"]["output"] == pytest.approx(1.5)
