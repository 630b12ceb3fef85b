"""The embedded model reading a long prompt (issue 44, items 3 and 7): a server that reports how far it
has read is not stalled, however long the reading takes, and the count shown moves on between its
reports at the rate it measured.

On a busy 2-core laptop llama.cpp reads 20-60 prompt tokens a second, reporting once per 512-token batch:
the first summary of the walk hit the 300 s first-token timeout while the server was still reading, was
retried from scratch (418.6 s in all), and the count sat at "0 / 1,838" for 17 s.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from local_harness import Listening
from scripted_server import Reply, ScriptedServer

from pi_compact.llm.local import model as local_model
from pi_compact.llm.openai import client as openai_client
from pi_compact.llm.protocol import ChatRequest, Done, Retrying
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.settings import RetrySettings, Settings


def _read(processed: int, total: int, time_ms: int) -> str:
    delta = {"role": "assistant", "content": None}
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                       "prompt_progress": {"total": total, "cache": 0, "processed": processed, "time_ms": time_ms}})


ANSWER = json.dumps({"choices": [{"index": 0, "delta": {"content": "read it"}, "finish_reason": "stop"}]})


def _local(monkeypatch: pytest.MonkeyPatch, server: ScriptedServer, retry: RetrySettings) -> Any:
    monkeypatch.setattr(local_model, "shared_server", lambda spec: Listening(server.base_url))
    monkeypatch.setattr(local_model, "runtime_installed", lambda: True)
    monkeypatch.setattr(local_model, "bundled_ready", lambda: True)
    settings = Settings(retry=retry)
    return create_model(resolve_model("local", settings=settings), settings=settings)


def _request() -> ChatRequest:
    return ChatRequest("s", [{"role": "user", "content": "summarize", "timestamp": 1}])


def test_a_prompt_read_for_longer_than_the_first_token_timeout_is_not_cut_off_while_the_server_reports(
    monkeypatch: pytest.MonkeyPatch, scripted_server: ScriptedServer,
) -> None:
    # First token allowed 1 s, a stall 1 s: the server reads for ~3 s, reporting every 0.5 s.
    retry = RetrySettings(timeout_ms=1000, idle_timeout_ms=1000, max_retries=1, base_delay_ms=1, max_delay_ms=5)
    model = _local(monkeypatch, scripted_server, retry)
    reports = tuple(_read(512 * n, 3000, 500 * n) for n in range(6))
    scripted_server.enqueue(Reply(raw_events=(*reports, ANSWER), chunk_delay_s=0.5))
    events = list(model.stream(_request()))
    assert not [e for e in events if isinstance(e, Retrying)]
    [done] = [e for e in events if isinstance(e, Done)]
    assert done.message["stopReason"] == "stop" and done.message["content"][0]["text"] == "read it"
    assert len(scripted_server.requests) == 1


def test_a_batch_slower_than_the_idle_timeout_is_waited_for_at_the_rate_the_server_reads(
    monkeypatch: pytest.MonkeyPatch, scripted_server: ScriptedServer,
) -> None:
    # The walk at load 15: a batch of 512 tokens took longer than the 120 s idle timeout, and the request
    # was cut off and read again from the start. Here a batch takes 1.5 s against an idle timeout of 1 s
    # (the first batch, before any rate is known, has the first-token timeout of 2 s).
    retry = RetrySettings(timeout_ms=2000, idle_timeout_ms=1000, max_retries=0)
    model = _local(monkeypatch, scripted_server, retry)
    reports = tuple(_read(512 * n, 2100, 1500 * n) for n in range(5))
    scripted_server.enqueue(Reply(raw_events=(*reports, ANSWER), chunk_delay_s=1.5))
    [done] = [e for e in model.stream(_request()) if isinstance(e, Done)]
    assert done.message["stopReason"] == "stop", done.message.get("errorMessage")


def test_a_server_that_stops_reporting_still_times_out(
    monkeypatch: pytest.MonkeyPatch, scripted_server: ScriptedServer,
) -> None:
    retry = RetrySettings(timeout_ms=600, idle_timeout_ms=600, max_retries=0)
    model = _local(monkeypatch, scripted_server, retry)
    scripted_server.enqueue(Reply(raw_events=(_read(0, 3000, 0), _read(512, 3000, 400), ANSWER), chunk_delay_s=2.0))
    [done] = [e for e in model.stream(_request()) if isinstance(e, Done)]
    assert done.message["stopReason"] == "error" and "retry.provider" in done.message["errorMessage"]


def test_between_reports_the_count_moves_on_at_the_measured_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(openai_client.time, "monotonic", lambda: now[0])
    client = openai_client.OpenAICompatModel.__new__(openai_client.OpenAICompatModel)
    client._reading, client.reading_rate, client._step = None, None, None
    client._read(512, 1838, 10_000)  # 512 tokens in 10 s: 51 a second
    assert client.progress == "Reading the prompt: 512 / 1,838 tokens…"
    now[0] += 5.0
    assert client.progress == "Reading the prompt: ~768 / 1,838 tokens (51/s)…"
    now[0] += 60.0
    assert client.progress == "Reading the prompt: ~1,837 / 1,838 tokens (51/s)…"  # never claims it is done


def test_a_new_prompt_is_counted_at_the_rate_the_last_one_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(openai_client.time, "monotonic", lambda: now[0])
    client = openai_client.OpenAICompatModel.__new__(openai_client.OpenAICompatModel)
    client._reading, client.reading_rate, client._step = None, None, None
    client._read(2048, 4096, 40_000)  # the last prompt: 51 a second
    client._read(0, 1838, 0)  # the next one starts: its first report says 0, and the next comes after 512
    now[0] += 17.0
    assert client.progress == "Reading the prompt: ~870 / 1,838 tokens (51/s)…"


def test_the_reading_rate_is_measured_from_the_servers_own_timing() -> None:
    client = openai_client.OpenAICompatModel.__new__(openai_client.OpenAICompatModel)
    client._reading, client.reading_rate, client._step = None, None, None
    client._read(5, 1000, 2)  # a few milliseconds tell nothing
    assert client.reading_rate is None
    client._read(1024, 2000, 40_960)
    assert client.reading_rate == pytest.approx(25.0)


def test_the_count_never_runs_past_the_next_report(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(openai_client.time, "monotonic", lambda: now[0])
    client = openai_client.OpenAICompatModel.__new__(openai_client.OpenAICompatModel)
    client._reading, client.reading_rate, client._step = None, None, None
    client._read(0, 12_185, 0)
    client._read(512, 12_185, 10_000)  # one batch of 512 tokens in 10 s; then the machine gets busy
    now[0] += 120.0
    assert client.progress == "Reading the prompt: ~1,023 / 12,185 tokens (51/s)…"
