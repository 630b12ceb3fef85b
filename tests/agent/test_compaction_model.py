"""``compaction.model``: another model writes the summaries, sized for its own window, falling back as
the chat model would; and every reply and compaction records what it cost.

The sessions are built by the composition root (``cli.wiring.build_runtime``) as the terminal and ``-p``
build them, against the scripted server, which answers each model by the name the request carries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import coding_session, sized, structured_summary, write_session
from rich.console import Console
from scripted_server import Reply, ScriptedServer, server_error_reply

from pi_compact.agent.events import CompactionEnd, SessionEvent
from pi_compact.cli.wiring import Runtime, build_runtime
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.options import AppOptions
from pi_compact.settings import CompactionSettings, ModelOverride, RetrySettings, Settings
from pi_compact.ui.compaction_view import end_renderable
from pi_compact.ui.status import session_table

CHAT = "openai/scripted"
SMALL = "openai/small-summarizer"  # a model litellm does not know: its window comes from the settings
SMALL_WINDOW = 3_000
FAST = RetrySettings(enabled=True, max_retries=1, base_delay_ms=1, max_delay_ms=2)
GPT_4O_MINI_INPUT, GPT_4O_MINI_OUTPUT = 1.5e-07, 6e-07  # litellm's prices per token


@pytest.fixture(autouse=True)
def _own_agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))


def settings_with(model: str | None) -> Settings:
    return Settings(
        compaction=CompactionSettings(keep_recent_tokens=400, reserve_tokens=1000, token_estimator="chars4",
                                      model=model),
        retry=FAST,
        models=((SMALL, ModelOverride(context_window=SMALL_WINDOW)),),
    )


@pytest.fixture
def runtimes(tmp_path: Path) -> Iterator[list[Runtime]]:
    built: list[Runtime] = []
    yield built
    for runtime in built:
        runtime.session.close()


def long_session() -> list[dict[str, Any]]:
    """``coding_session`` whose second request is ~6,000 tokens long: more than the small window holds."""
    entries = coding_session()
    long_request = "Now add a test in tests/test_cli.py. " + sized(6_000)
    entries[6]["message"]["content"] = [{"type": "text", "text": long_request}]
    return entries


def session_on(
    server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime], settings: Settings, *,
    chat: str = CHAT, events: list[SessionEvent] | None = None, entries: list[dict[str, Any]] | None = None,
) -> Runtime:
    """A runtime on a three-turn coding session (entries 0-9 get summarized), built as the CLI builds it."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "session.jsonl"
    write_session(path, entries if entries is not None else coding_session())
    options = AppOptions(cwd=tmp_path, model=chat, api_base=server.base_url, api_key="test",
                         context_window=128_000, session=path)
    runtime = build_runtime(options, settings, (events if events is not None else []).append)
    runtimes.append(runtime)
    return runtime


def answer_summaries_for(server: ScriptedServer, model_id: str, reply: Reply | None = None) -> None:
    """Every summary request to ``model_id`` gets ``reply`` (a valid summary by default)."""
    chosen = reply or Reply(text=structured_summary("by the summarizer"))
    server.route = lambda body: chosen if body.get("model") == model_id else None


def summary_requests(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["messages"][0]["content"] == SYSTEM_PROMPT]


def request_size(request: dict[str, Any]) -> int:
    """Our estimate of a summary request: its texts and the output it asks for."""
    texts = [m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
             for m in request["messages"]]
    return sum(estimate_text_tokens(t, "chars4") for t in texts) + int(request["max_tokens"])


def compaction_entry(runtime: Runtime) -> dict[str, Any]:
    assert runtime.store.path is not None
    last: dict[str, Any] = json.loads(runtime.store.path.read_text(encoding="utf-8").splitlines()[-1])
    assert last["type"] == "compaction"
    return last


def rendered(renderable: Any) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return " ".join(console.export_text().split())


# ---- who writes the summary, and sized for which window ------------------------------------------------


def test_the_summary_request_goes_to_the_compaction_model(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(SMALL))
    answer_summaries_for(scripted_server, "small-summarizer")
    assert runtime.session.compact() is not None
    requests = summary_requests(scripted_server)
    assert requests and {r["model"] for r in requests} == {"small-summarizer"}
    details = compaction_entry(runtime)["details"]
    assert (details["source"], details["summaryModel"]) == ("model", SMALL)


def test_without_a_compaction_model_the_chat_model_writes_the_summary(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(None))
    answer_summaries_for(scripted_server, "scripted")
    assert runtime.session.compact() is not None
    assert {r["model"] for r in summary_requests(scripted_server)} == {"scripted"}
    assert compaction_entry(runtime)["details"]["summaryModel"] == CHAT


def test_a_small_compaction_window_gets_the_history_in_smaller_requests_than_the_chat_window(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    answer_summaries_for(scripted_server, "scripted")
    chat_runtime = session_on(scripted_server, tmp_path / "chat", runtimes, settings_with(None),
                              entries=long_session())
    assert chat_runtime.session.compact() is not None
    (whole,) = summary_requests(scripted_server)  # the chat model's 128k window takes it in one request
    assert request_size(whole) > SMALL_WINDOW

    answer_summaries_for(scripted_server, "small-summarizer")
    small_runtime = session_on(scripted_server, tmp_path / "small", runtimes, settings_with(SMALL),
                               entries=long_session())
    assert small_runtime.session.compact() is not None
    chunks = summary_requests(scripted_server)[1:]
    assert len(chunks) >= 2 and {r["model"] for r in chunks} == {"small-summarizer"}
    assert all(request_size(r) <= SMALL_WINDOW for r in chunks), [request_size(r) for r in chunks]
    assert all(r["max_tokens"] <= SMALL_WINDOW // 2 for r in chunks)


# ---- its failures fall back, naming it ---------------------------------------------------------------


def test_a_failing_compaction_model_falls_back_to_the_model_free_summary_naming_it(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    events: list[SessionEvent] = []
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(SMALL), events=events)
    answer_summaries_for(scripted_server, "small-summarizer", server_error_reply(500, repeat=True))
    assert runtime.session.compact() is not None
    details = compaction_entry(runtime)["details"]
    assert details["fallback"] is True and details["source"] == "fallback"
    assert details["error"].startswith(f"The compaction model {SMALL} failed: ")
    (end,) = [e for e in events if isinstance(e, CompactionEnd)]
    assert f"Summary built without a model: The compaction model {SMALL} failed: " in rendered(
        end_renderable(end, 1.0))


def test_a_compaction_model_that_answered_unusably_is_named_but_not_said_to_have_failed(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    events: list[SessionEvent] = []
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(SMALL), events=events)
    answer_summaries_for(scripted_server, "small-summarizer", Reply(text="It is about a CLI.", repeat=True))
    assert runtime.session.compact() is not None
    details = compaction_entry(runtime)["details"]
    assert details["fallback"] is True
    assert details["error"] == f"The compaction model {SMALL}: The model's summary lacked the required sections twice."
    (end,) = [e for e in events if isinstance(e, CompactionEnd)]
    block = rendered(end_renderable(end, 1.0))
    assert "The model's unused answers · " in block and "failed" not in block


def test_a_compaction_model_without_its_api_key_falls_back_instead_of_failing(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with("anthropic/claude-haiku-4-5"))
    assert runtime.session.compact() is not None
    assert summary_requests(scripted_server) == []  # another provider: the chat model's server is not asked
    details = compaction_entry(runtime)["details"]
    assert details["fallback"] is True
    assert details["error"].startswith("The compaction model anthropic/claude-haiku-4-5 failed: ")
    assert "ANTHROPIC_API_KEY" in details["error"]


def test_a_compaction_model_of_unknown_window_falls_back_naming_it(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with("openai/no-such-summarizer"))
    assert runtime.session.compact() is not None
    assert summary_requests(scripted_server) == []
    error = compaction_entry(runtime)["details"]["error"]
    assert error.startswith("The compaction model openai/no-such-summarizer failed: The context window of "
                            "model openai/no-such-summarizer is unknown: set "
                            'models.openai/no-such-summarizer.contextWindow in ')
    assert "--context-window" not in error  # that flag sizes the chat model


# ---- what it cost ------------------------------------------------------------------------------------


def test_replies_of_a_priced_model_record_their_cost_in_the_session_file(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(None), chat="openai/gpt-4o-mini")
    scripted_server.enqueue(Reply(text="Done.", prompt_tokens=2_000, completion_tokens=40))
    runtime.session.prompt("One more thing.")
    assert runtime.store.path is not None
    line = json.loads(runtime.store.path.read_text(encoding="utf-8").splitlines()[-1])
    cost = line["message"]["usage"]["cost"]
    assert cost["input"] == pytest.approx(2_000 * GPT_4O_MINI_INPUT)
    assert cost["output"] == pytest.approx(40 * GPT_4O_MINI_OUTPUT)
    assert cost["total"] == pytest.approx(2_000 * GPT_4O_MINI_INPUT + 40 * GPT_4O_MINI_OUTPUT)


def test_a_compaction_records_the_usage_and_cost_of_all_its_requests_and_the_block_shows_them(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    events: list[SessionEvent] = []
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with("openai/gpt-4o-mini"), events=events)
    # The first summary lacks its headings, so it is asked for again: both requests are paid for.
    scripted_server.enqueue(Reply(text="no headings", prompt_tokens=1_000, completion_tokens=30),
                            Reply(text=structured_summary(), prompt_tokens=1_200, completion_tokens=50))
    assert runtime.session.compact() is not None
    assert [r["model"] for r in summary_requests(scripted_server)] == ["gpt-4o-mini", "gpt-4o-mini"]
    usage = compaction_entry(runtime)["details"]["usage"]
    assert {k: usage[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == {
        "input": 2_200, "output": 80, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2_280}
    assert usage["cost"]["total"] == pytest.approx(2_200 * GPT_4O_MINI_INPUT + 80 * GPT_4O_MINI_OUTPUT)
    (end,) = [e for e in events if isinstance(e, CompactionEnd)]
    assert "Summary by the model openai/gpt-4o-mini · 2,200 tokens in, 80 out · $0.0004" in rendered(
        end_renderable(end, 1.0))


def test_an_unpriced_compaction_model_reads_cost_unknown(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    events: list[SessionEvent] = []
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(SMALL), events=events)
    answer_summaries_for(scripted_server, "small-summarizer")
    assert runtime.session.compact() is not None
    (end,) = [e for e in events if isinstance(e, CompactionEnd)]
    text = rendered(end_renderable(end, 1.0))
    assert f"Summary by the model {SMALL} · 10 tokens in, 5 out · cost unknown" in text
    assert "$" not in text


def test_session_shows_the_tokens_and_cost_of_replies_and_compactions(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with("openai/gpt-4o-mini"),
                         chat="openai/gpt-4o-mini")
    scripted_server.enqueue(Reply(text=structured_summary(), prompt_tokens=1_000, completion_tokens=100),
                            Reply(text="Done.", prompt_tokens=500, completion_tokens=20, cached_tokens=300))
    assert runtime.session.compact() is not None
    runtime.session.prompt("One more thing.")
    text = rendered(session_table(runtime.store, runtime.session.compactions))
    # coding_session's last reply used 5,000/100 with no price; the compaction 1,000/100; the new reply
    # 200 + 300 cached/20.
    assert "Tokens 6,200 in · 220 out · 300 cache read · 0 cache write (6,720 total, replies and compactions)" \
        in text
    cost = 1_200 * GPT_4O_MINI_INPUT + 120 * GPT_4O_MINI_OUTPUT + 300 * 7.5e-08
    assert f"Cost ${cost:.4f} (some calls unpriced)" in text
    summary_cost = 1_000 * GPT_4O_MINI_INPUT + 100 * GPT_4O_MINI_OUTPUT
    assert f"Summaries 1,000 in (0 from the cache) · 100 out · ${summary_cost:.4f}" in text


def test_session_says_cost_unknown_when_no_model_had_a_price(
    scripted_server: ScriptedServer, tmp_path: Path, runtimes: list[Runtime]
) -> None:
    runtime = session_on(scripted_server, tmp_path, runtimes, settings_with(SMALL))
    answer_summaries_for(scripted_server, "small-summarizer")
    assert runtime.session.compact() is not None
    text = rendered(session_table(runtime.store, runtime.session.compactions))
    assert "Cost unknown (no price is known for the models used)" in text
