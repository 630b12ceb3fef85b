"""A session the provider's engine compacted (issue 45) continues in pi 0.73.1: pi reads the readable summary
from the ordinary ``compaction`` entry and sends it as its text (no block, which pi does not know), against the
validating fake Anthropic server. Skipped where pi is not installed (``node_modules``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, Compaction, text_reply
from fakes.pi_probe import pi_installed, run_pi
from test_compaction_engines import BLOCK, compact, two_turns

from pi_compact.providers import ANTHROPIC_COMPACTION

pytestmark = pytest.mark.skipif(not pi_installed(), reason="pi is not installed (node_modules)")


def test_pi_continues_a_session_the_anthropic_engine_compacted_with_its_readable_summary(tmp_path: Path) -> None:
    with FakeAnthropicServer(min_cache_tokens=0).start() as server:
        harness = two_turns(server, tmp_path)
        entry = compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
        assert entry["details"]["engine"] == ANTHROPIC_COMPACTION
        ours = len(server.records)
        server.enqueue(text_reply("You pasted a word list."))
        run = run_pi("anthropic", server.base_url, "What did I paste?", harness.cwd, model="claude-sonnet-4-6",
                     extra_args=("--session", str(harness.path)))
        records = server.records[ours:]
    assert run.returncode == 0 and run.stdout.strip() == "You pasted a word list.", run.stderr
    [asked] = records
    assert asked.error is None
    first = asked.body["messages"][0]
    assert first["role"] == "user" and BLOCK in str(first["content"])
    assert [part["type"] for message in asked.body["messages"] for part in message["content"]
            if part["type"] == "compaction"] == []
    assert "context_management" not in asked.body
    lines = harness.path.read_text(encoding="utf-8").splitlines()
    assert '"You pasted a word list."' in lines[-1]  # pi appended its turn to our file
