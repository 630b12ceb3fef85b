"""``pi-compact compact FILE`` right after a session (issue 34 item 1): no chat request in this run, yet the
provider still holds what the session's last requests wrote, so the summary is asked on that prefix (the
request the next turn would send) and read from the cache, on the fake Anthropic server."""

from __future__ import annotations

from pathlib import Path

import pytest
from cache_harness import SETTINGS_40K as SETTINGS
from cache_harness import SONNET_40K, asks_summary, talk
from fakes.anthropic_server import FakeAnthropicServer

from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import session_tools
from pi_compact.cli.choices import CompactOptions
from pi_compact.cli.compact_run import compact_file
from pi_compact.cli.wiring import system_prompt_for
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.session.store import SessionStore

CREATED = 1_700_000_000_000


def test_compact_file_right_after_a_session_asks_on_its_cached_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # ``compact`` builds the system prompt of a session in the current directory
    path = tmp_path / "session.jsonl"
    with FakeAnthropicServer().start() as server:
        server.route = talk
        store = SessionStore.create(path, str(cwd), CREATED)
        tools = session_tools(store, SETTINGS)
        session = AgentSession(store=store, model=LiteLLMModel(SONNET_40K, api_base=server.base_url, api_key="k"),
                               settings=SETTINGS, tools=tools, system_prompt=system_prompt_for(cwd, tools, print),
                               cwd=cwd, emit=lambda event: None)
        for part in range(40):
            usage = session.context_usage()
            if usage.tokens + 2_200 > usage.threshold:
                break
            session.prompt(f"Write part {part} of the essay.")
        session.close()
        sent = len(server.records)
        options = CompactOptions(session=path, model=SONNET_40K.model, api_base=server.base_url, api_key="k",
                                 context_window=SONNET_40K.context_window)
        assert compact_file(options, SETTINGS, SessionStore.open(path, str(cwd), CREATED)) == 0
        asked = [record for record in server.records[sent:] if asks_summary(record.body)]
    [entry] = [e for e in SessionStore.open(path, str(cwd), CREATED).branch() if e["type"] == "compaction"]
    assert entry["details"]["summaryRequest"]["shape"] == "prefix"
    assert asked[0].usage["cache_read_input_tokens"] >= 0.8 * asked[0].prompt_tokens
