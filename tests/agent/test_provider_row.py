"""A vendor added as one row of the provider table (``providers.py``, on the ground floor): its endpoint, its key
variable and its own overflow wording, with no other code.
The row is put in the table here as the code would have it."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_harness import SETTINGS, WINDOW, Harness, assert_compactions_paired, summary_reply, two_finished_turns
from scripted_server import Reply, ScriptedServer, error_reply

from pi_compact import providers
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.errors import ConfigError
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.session.store import SessionStore

ACME = providers.Provider("acme", hosts=("api.acme.example",), key_variable="ACME_API_KEY",
                          base_url="https://api.acme.example/v1", overflow_texts=("acme context budget exhausted",))


@pytest.fixture(autouse=True)
def acme_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(providers._BY_PREFIX, "acme", ACME)


def test_the_rows_endpoint_and_key_variable_serve_its_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-acme")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    model = create_model(resolve_model("acme/acme-coder", context_window=WINDOW, settings=SETTINGS),
                         settings=SETTINGS)
    assert isinstance(model, OpenAICompatModel)
    assert (model._api_base, model._api_key) == ("https://api.acme.example/v1", "sk-acme")


def test_without_its_key_the_vendor_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACME_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # never sent to another provider
    info = resolve_model("acme/acme-coder", context_window=WINDOW, settings=SETTINGS)
    with pytest.raises(ConfigError, match="Set ACME_API_KEY"):
        create_model(info, settings=SETTINGS)


def test_the_vendors_own_words_overflow_compact_and_continue(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    info = resolve_model("acme/acme-coder", context_window=WINDOW, settings=SETTINGS)
    model = create_model(info, api_base=scripted_server.base_url, api_key="test", settings=SETTINGS)
    events: list = []
    session = AgentSession(store=SessionStore.create(tmp_path / "s.jsonl", str(tmp_path), 1_700_000_000_000),
                           model=model, settings=SETTINGS, tools=default_tools(), system_prompt="agent", cwd=tmp_path,
                           emit=events.append)
    h = Harness(session, scripted_server, tmp_path / "s.jsonl", tmp_path, events)
    two_finished_turns(h)
    scripted_server.enqueue(error_reply(400, "Acme context budget exhausted (code 12)"), summary_reply(),
                            Reply(text="RETRY-ANSWER"))
    final = session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    assert [(s.reason, e.will_retry) for s, e in assert_compactions_paired(events)] == [("overflow", True)]
    assert scripted_server.requests[-1]["model"] == "acme-coder"
