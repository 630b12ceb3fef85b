"""Issue 43's cases on the fake Anthropic server (Sonnet prices; the fake drops the cached messages when the
thinking settings change, as the API does): one window plan per session, so no request changes ``thinking`` or
``max_tokens``, a prompt that takes the context past the threshold is compacted before it is sent, and a summary
is asked on the cached prefix only where that prefix is really cached."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from agent_harness import make_harness
from fakes.anthropic_server import FakeAnthropicServer
from plan_harness import ReadFiles, asks_summary, changes, dollars, fill, log_prompt, talk

import pi_compact
from pi_compact.clock import now_ms
from pi_compact.llm.protocol import ModelInfo
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

SETTINGS = Settings(retry=RetrySettings(enabled=False))


def sonnet(window: int) -> ModelInfo:
    return ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", window, 64_000, reasoning=True)


def test_a_pasted_log_that_crosses_the_threshold_is_compacted_first_on_the_warm_cache(tmp_path: Path) -> None:
    # Case 1: a ~107k session on a 130k window, the cache warm from the last turn, an ~11k-token log pasted.
    with FakeAnthropicServer().start() as server:
        server.route = talk()
        h = make_harness(server, tmp_path, settings=SETTINGS, info=sonnet(130_000))
        assert fill(h.session, 107_000) > 100_000
        first = len(server.records)
        h.session.prompt(log_prompt(11_000))
        records = list(server.records)
    turn = records[first:]
    assert [asks_summary(r.body) for r in turn] == [True, False]  # the summary first, then the prompt, once
    assert changes(records) == []  # one thinking budget and one cap for the whole conversation
    summary = turn[0]
    assert summary.usage is not None and summary.usage["cache_read_input_tokens"] >= 0.9 * summary.prompt_tokens
    assert turn[1].prompt_tokens < 40_000  # the prompt went out on the small context
    assert dollars(turn) <= 0.15


def test_after_a_resume_on_a_cold_cache_the_log_is_compacted_first_and_serialized(tmp_path: Path) -> None:
    # Case 2: the session resumed after its cache expired; the pasted log takes it past the threshold.
    with FakeAnthropicServer().start() as server:
        server.route = talk()
        first_run = make_harness(server, tmp_path, settings=SETTINGS, info=sonnet(140_000))
        fill(first_run.session, 118_000)
        first_run.session.close()
        server.cache.clear()  # resumed ten minutes later: the cache expired
        first = len(server.records)
        resumed = make_harness(server, tmp_path, settings=SETTINGS, info=sonnet(140_000),
                               store=SessionStore.open(first_run.path, str(first_run.cwd), 1_700_000_000_000),
                               now_ms=lambda: now_ms() + 600_000)
        resumed.session.prompt(log_prompt(11_500))
        records = list(server.records)
    turn = records[first:]
    [entry] = [e for e in resumed.entries() if e["type"] == "compaction"]
    assert entry["details"]["summaryRequest"]["shape"] == "serialized"  # nothing of the prefix is cached
    asked = [asks_summary(r.body) for r in turn]
    assert asked[-1] is False and all(asked[:-1]) and len(asked) >= 2  # the summary (in chunks), then the prompt
    assert changes(records) == []
    assert dollars(turn) <= 0.45  # one uncached read of the context alone is $0.37


def test_clearing_steps_change_neither_the_thinking_budget_nor_the_cap(tmp_path: Path) -> None:
    # Case 3: after a clearing step the requests went out sized from the usage before it, budget down and up.
    settings = Settings(retry=RetrySettings(enabled=False), compaction=CompactionSettings(keep_recent_tokens=20_000))
    with FakeAnthropicServer().start() as server:
        h = make_harness(server, tmp_path, settings=settings, info=sonnet(200_000))
        server.route = ReadFiles(h.cwd, 24).route
        h.session.prompt("Read part_000.txt, then each next part file, one at a time, until told to stop.")
        records = list(server.records)
    cleared = [e for e in h.events if getattr(e, "text", "").startswith("Cleared ")]
    assert cleared, "the loop must clear at least once"
    assert [r.error for r in records if r.error is not None] == []
    assert changes(records) == []


def test_a_resumed_session_another_agent_wrote_is_summarized_serialized(tmp_path: Path) -> None:
    # Case 4: pi's (or another machine's) session, resumed within the cache's lifetime: nothing of it is in this
    # agent's cache (another system prompt and tools, or another account), so the prefix route would write it all.
    with FakeAnthropicServer().start() as server:
        server.route = talk()
        writer = make_harness(server, tmp_path, settings=SETTINGS, info=sonnet(140_000))
        fill(writer.session, 60_000)
        writer.session.close()
        lines = writer.path.read_text(encoding="utf-8").splitlines()
        foreign = [json.loads(line) for line in lines]
        for entry in foreign:  # what pi writes: replies that name no request of ours
            entry.pop("requestDigest", None)
        writer.path.write_text("".join(json.dumps(e) + "\n" for e in foreign), encoding="utf-8")
        server.cache.clear()  # that agent's requests left nothing this agent's requests could read
        first = len(server.records)
        resumed = make_harness(server, tmp_path, settings=SETTINGS, info=sonnet(140_000),
                               store=SessionStore.open(writer.path, str(writer.cwd), 1_700_000_000_000))
        assert resumed.session.compact() is not None
        asked = server.records[first:]
    [entry] = [e for e in resumed.entries() if e["type"] == "compaction"]
    assert entry["details"]["summaryRequest"]["shape"] == "serialized"
    assert all(r.usage is not None and r.usage["cache_creation_input_tokens"] == 0 for r in asked)


def test_one_prompt_that_crosses_the_threshold_refits_the_plan_at_most_once(tmp_path: Path) -> None:
    # Case 5: the budgets were rebuilt 10 times a prompt and the settings refitted 5 times.
    with FakeAnthropicServer().start() as server:
        server.route = talk()
        h = make_harness(server, tmp_path, settings=SETTINGS, info=sonnet(60_000))
        h.session.prompt("Write part 0 of the essay.")
        built = h.session.refits
        assert built == 1  # built once, when first needed
        fill(h.session, 40_000)
        h.session.prompt(log_prompt(8_000))  # it crosses the threshold: compacted first
        assert [e["type"] for e in h.entries()].count("compaction") == 1
        assert h.session.refits == built  # no input changed: never rebuilt
        h.session.set_thinking_level("high")
        h.session.prompt("Write one more part.")
        assert h.session.refits == built + 1  # the level changed: rebuilt once


def test_the_plan_is_built_in_one_place() -> None:
    """``plan_window`` (``fitted_settings``' successor) is called by the session in one method; the other callers
    run with no session (``compact FILE``, the dry run); nothing else fits the settings to a window."""
    package = Path(pi_compact.__file__).parent
    calls: dict[str, list[str]] = {}
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in ("plan_window", "fit_to_window"):
                    calls.setdefault(node.func.id, []).append(f"{path.relative_to(package)}:{function.name}")
    assert sorted(calls["plan_window"]) == ["agent/compaction/offline.py:_fitted",
                                            "agent/compaction/offline.py:_prepare", "agent/session.py:_refit",
                                            "cli/choices.py:fitted_settings"]
    assert sorted(set(calls["fit_to_window"])) == ["compaction/threshold.py:validate_against_window",
                                                   "compaction/window.py:plan_window"]
