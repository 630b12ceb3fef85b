"""A vendor with its own overflow wording is data, not code: one settings entry or one models.json entry.

Against the scripted server, a reply refused with the vendor's own words is taken for an overflow:
the session compacts, retries once and answers; without the entry the same words are a plain error.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, WINDOW, Harness, assert_compactions_paired, summary_reply, two_finished_turns
from scripted_server import Reply, ScriptedServer, error_reply

from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.session.store import SessionStore
from pi_compact.settings import ModelOverride, Settings
from pi_compact.settings.pi_models import parse_pi_models

VENDOR_WORDS = "Kontext voll: bitte kürzen (vendor code 7781)"


def harness(server: ScriptedServer, tmp_path: Path, settings: Settings, model_name: str) -> Harness:
    """A real AgentSession on the model the settings describe, built as the CLI builds it."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    path = tmp_path / "session.jsonl"
    info = resolve_model(model_name, context_window=WINDOW, settings=settings)
    model = create_model(info, api_key="test", settings=settings)
    events: list = []
    session = AgentSession(store=SessionStore.create(path, str(cwd), 1_700_000_000_000), model=model,
                           settings=settings, tools=default_tools(), system_prompt="agent", cwd=cwd,
                           emit=events.append)
    return Harness(session, server, path, cwd, events)


def settings_entry(server: ScriptedServer, texts: list[str] | None) -> tuple[Settings, str]:
    override = ModelOverride(api_base=server.base_url, overflow_texts=tuple(texts or ()))
    return replace(SETTINGS, models=(("openai/vendor-model", override),)), "openai/vendor-model"


def models_json_entry(server: ScriptedServer, texts: list[str] | None) -> tuple[Settings, str]:
    provider = {"baseUrl": server.base_url, "api": "openai-completions", "apiKey": "sk-vendor",
                "models": [{"id": "vendor-model", "contextWindow": WINDOW}]}
    if texts:
        provider["overflowTexts"] = texts
    pi_models, warnings = parse_pi_models(json.dumps({"providers": {"vendor": provider}}), "models.json")
    assert warnings == []
    return replace(SETTINGS, pi_models=pi_models), "vendor/vendor-model"


def run_overflow(h: Harness) -> dict:
    two_finished_turns(h)
    h.server.enqueue(error_reply(400, VENDOR_WORDS), summary_reply(), Reply(text="RETRY-ANSWER"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None
    return final


def test_a_settings_entry_makes_the_vendors_words_an_overflow(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    settings, name = settings_entry(scripted_server, ["kontext voll"])
    h = harness(scripted_server, tmp_path, settings, name)
    final = run_overflow(h)
    assert final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    assert [(s.reason, e.will_retry) for s, e in assert_compactions_paired(h.events)] == [("overflow", True)]


def test_a_models_json_entry_makes_the_vendors_words_an_overflow(scripted_server: ScriptedServer,
                                                                 tmp_path: Path) -> None:
    settings, name = models_json_entry(scripted_server, ["vendor code 7781"])
    h = harness(scripted_server, tmp_path, settings, name)
    final = run_overflow(h)
    assert final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    assert [(s.reason, e.will_retry) for s, e in assert_compactions_paired(h.events)] == [("overflow", True)]
    assert scripted_server.request_headers[-1]["authorization"] == "Bearer test"  # --api-key wins over the file


def test_without_the_entry_the_same_words_are_a_plain_error(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    settings, name = models_json_entry(scripted_server, None)
    h = harness(scripted_server, tmp_path, settings, name)
    final = run_overflow(h)
    assert final["stopReason"] == "error" and VENDOR_WORDS in final["errorMessage"]
    assert assert_compactions_paired(h.events) == []
