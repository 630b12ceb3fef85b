"""Our compaction entries still open in pi: pi's own ``buildSessionContext`` (via node) sees what we see.

Runs only where ``node`` and the npm package @mariozechner/pi-coding-agent (0.73.1) resolve from the
project root (``npm install --no-save @mariozechner/pi-coding-agent@0.73.1``); skipped otherwise.
pi ignores ``retainedTail`` and rebuilds the kept region from ``firstKeptEntryId``; we read the
tail. Both must give the same messages.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_harness import make_harness
from builders import (
    assistant,
    branch_summary,
    chain,
    coding_session,
    compaction_settings,
    custom_message_entry,
    model_change,
    roles,
    run_compaction,
    sized,
    structured_summary,
    usage,
    user,
    write_session,
)
from pi_session import PACKAGE, PROJECT_ROOT, pi_unavailable
from scripted_server import Reply, ScriptedServer

from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings

# Loads a session file with pi's SessionManager and prints the context's messages as JSON.
# A reasoning model on the scripted (OpenAI-compatible) server: levels go out as ``reasoning_effort``.
REASONING = ModelInfo("openai/scripted", "openai", 10_000, None, reasoning=True)

PI_CONTEXT_SCRIPT = f"""
import {{ SessionManager }} from "{PACKAGE}";
const [file, dir] = process.argv.slice(1);
const context = SessionManager.open(file, dir).buildSessionContext();
process.stdout.write(JSON.stringify(context.messages));
"""


@pytest.fixture
def pi_context(tmp_path: Path) -> Any:
    reason = pi_unavailable()
    if reason is not None:
        pytest.skip(reason)

    def read(path: Path) -> list[dict[str, Any]]:
        env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
        done = subprocess.run(
            ["node", "--input-type=module", "-e", PI_CONTEXT_SCRIPT, str(path), str(tmp_path)],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env,
        )
        assert done.returncode == 0, done.stderr
        messages: list[dict[str, Any]] = json.loads(done.stdout)
        return messages

    return read


def our_context(path: Path) -> list[dict[str, Any]]:
    return [dict(m) for m in SessionStore.open(path, str(path.parent), 0).context().messages]


def compact(path: Path, server: ScriptedServer, marker: str, **options: Any) -> None:
    server.enqueue(Reply(text=structured_summary(marker)))
    assert run_compaction(path, server.base_url, **options) is not None


@pytest.mark.parametrize("retain_tail", [True, False])
def test_pi_builds_the_same_context_from_our_compaction(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any, retain_tail: bool
) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    compact(path, scripted_server, "first", settings=compaction_settings(retain_tail=retain_tail))
    assert ("retainedTail" in json.loads(path.read_text().splitlines()[-1])) is retain_tail
    theirs = pi_context(path)
    assert roles(theirs) == ["compactionSummary", "user", "assistant"]
    assert theirs == our_context(path)


def test_pi_builds_the_same_context_after_two_compactions(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any
) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    compact(path, scripted_server, "first")
    store = SessionStore.open(path, str(path.parent), 0)
    store.append_message(user("Also update the changelog. " + sized(600)), 1)
    store.append_message(assistant("Changelog updated. " + sized(200), usage=usage(6000, 100)), 2)
    compact(path, scripted_server, "second")
    theirs = pi_context(path)
    # The second summary is the update: the new span's summary with the first one merged in by code.
    assert roles(theirs)[0] == "compactionSummary" and "Ship the feature second" in theirs[0]["summary"]
    assert theirs == our_context(path)


def test_pi_builds_the_same_context_when_the_kept_region_holds_other_entries(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any
) -> None:
    path = tmp_path / "session.jsonl"
    entries = chain(
        *coding_session()[:10],
        user("Run the tests and fix failures. " + sized(300)),  # test-id-10: the cut
        model_change("openai", "gpt-4o"),
        custom_message_entry("A note from an extension.", custom_type="note"),
        branch_summary(structured_summary("a side branch"), "test-id-9"),
        assistant("All 12 tests pass. " + sized(100), usage=usage(5000, 100)),
    )
    write_session(path, entries)
    compact(path, scripted_server, "first")
    theirs = pi_context(path)
    assert roles(theirs) == ["compactionSummary", "user", "custom", "branchSummary", "assistant"]
    ours = our_context(path)
    assert "details" not in ours[2]  # like pi, an absent ``details`` stays absent
    assert theirs == ours


# ---- the model and thinking level a session records (pi restores both on resume) --------------------

# Loads a session file with pi's SessionManager and prints what pi restores from it: the model and
# thinking level of the context, the branch's entry types, and the model pi's registry finds.
PI_RESTORE_SCRIPT = f"""
import {{ AuthStorage, ModelRegistry, SessionManager }} from "{PACKAGE}";
const [file, dir] = process.argv.slice(1);
const manager = SessionManager.open(file, dir);
const context = manager.buildSessionContext();
const registry = ModelRegistry.create(AuthStorage.create(dir + "/auth.json"), dir + "/models.json");
const found = context.model ? registry.find(context.model.provider, context.model.modelId) : undefined;
process.stdout.write(JSON.stringify({{
  model: context.model, thinkingLevel: context.thinkingLevel,
  types: manager.getBranch().map((entry) => entry.type),
  found: found ? [found.provider, found.id] : null,
}}));
"""


@pytest.fixture
def pi_restore(tmp_path: Path) -> Any:
    reason = pi_unavailable()
    if reason is not None:
        pytest.skip(reason)

    def read(path: Path) -> dict[str, Any]:
        env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
        done = subprocess.run(
            ["node", "--input-type=module", "-e", PI_RESTORE_SCRIPT, str(path), str(tmp_path)],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env,
        )
        assert done.returncode == 0, done.stderr
        restored: dict[str, Any] = json.loads(done.stdout)
        return restored

    return read


def test_pi_reads_the_opening_entries_of_a_session_we_start(
    scripted_server: ScriptedServer, tmp_path: Path, pi_restore: Any
) -> None:
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(Reply(text="Hi."))
    h.session.prompt("Say hi.")
    restored = pi_restore(h.path)
    # pi's branch holds a thinking_level_change, so pi resuming this file keeps "off" and writes nothing.
    assert restored["types"] == ["model_change", "thinking_level_change", "message", "message"]
    assert (restored["model"], restored["thinkingLevel"]) == ({"provider": "openai", "modelId": "scripted"}, "off")
    context = SessionStore.open(h.path, str(h.cwd), 0).context()
    assert (context.model, context.thinking_level) == (("openai", "scripted"), "off")


def test_pi_restores_the_model_we_switched_to(
    scripted_server: ScriptedServer, tmp_path: Path, pi_restore: Any
) -> None:
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(Reply(text="Hi."))
    h.session.prompt("Say hi.")
    settings = Settings()
    gemini = create_model(resolve_model("gemini/gemini-2.5-pro", settings=settings), settings=settings)
    h.session.set_model(gemini)  # a window of a million tokens: no compaction, no request
    restored = pi_restore(h.path)
    # The scripted model could not think ("off"); Gemini 2.5 Pro runs pi's default "medium", recorded
    # after the switch as pi's setModel records it.
    assert restored["types"][-2:] == ["model_change", "thinking_level_change"]
    assert restored["thinkingLevel"] == "medium"
    # litellm's "gemini" is pi's "google": pi finds the model in its registry and restores it.
    assert restored["model"] == {"provider": "google", "modelId": "gemini-2.5-pro"}
    assert restored["found"] == ["google", "gemini-2.5-pro"]
    assert SessionStore.open(h.path, str(h.cwd), 0).context().model == ("google", "gemini-2.5-pro")


def test_pi_restores_the_thinking_level_we_set(
    scripted_server: ScriptedServer, tmp_path: Path, pi_restore: Any
) -> None:
    h = make_harness(scripted_server, tmp_path, info=REASONING, thinking="low")
    scripted_server.enqueue(Reply(text="Hi."), Reply(text="Again."))
    h.session.prompt("Say hi.")
    h.session.set_thinking_level("high")
    h.session.prompt("Again.")
    restored = pi_restore(h.path)
    assert restored["types"] == ["model_change", "thinking_level_change", "message", "message",
                                 "thinking_level_change", "message", "message"]
    assert restored["thinkingLevel"] == "high"


# Writes a session the way pi's SessionManager does (model, thinking level, one exchange) and prints its path.
PI_WRITE_SCRIPT = f"""
import {{ SessionManager }} from "{PACKAGE}";
const [cwd, dir] = process.argv.slice(1);
const manager = SessionManager.create(cwd, dir);
manager.appendModelChange("openai", "scripted");
manager.appendThinkingLevelChange("minimal");
manager.appendMessage({{ role: "user", content: [{{ type: "text", text: "Hi." }}], timestamp: 1 }});
manager.appendMessage({{ role: "assistant", content: [{{ type: "text", text: "Hello." }}], api: "openai-completions",
  provider: "openai", model: "scripted", stopReason: "stop", timestamp: 2,
  usage: {{ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
           cost: {{ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }} }} }});
process.stdout.write(manager.getSessionFile());
"""


def test_we_continue_pi_session_at_its_thinking_level(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    reason = pi_unavailable()
    if reason is not None:
        pytest.skip(reason)
    cwd = tmp_path / "work"
    cwd.mkdir()
    done = subprocess.run(["node", "--input-type=module", "-e", PI_WRITE_SCRIPT, str(cwd), str(tmp_path / "s")],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout)
    store = SessionStore.open(path, str(cwd), 0)
    h = make_harness(scripted_server, tmp_path, info=REASONING, store=store)
    scripted_server.enqueue(Reply(text="Sure."))
    h.session.prompt("Go on.")
    assert h.agent_requests()[-1]["reasoning_effort"] == "minimal"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["thinkingLevel"] for line in lines if line["type"] == "thinking_level_change"] == ["minimal"]


# ---- the usage we record is the usage pi counts --------------------------------------------------------

# Opens a session file as a pi session and prints pi's own totals (getSessionStats: tokens and cost).
PI_STATS_SCRIPT = f"""
import {{ AuthStorage, ModelRegistry, SessionManager, createAgentSession }} from "{PACKAGE}";
const [file, dir] = process.argv.slice(1);
const authStorage = AuthStorage.create(dir + "/auth.json");
const {{ session }} = await createAgentSession({{
  cwd: dir, agentDir: dir, sessionManager: SessionManager.open(file, dir), authStorage,
  modelRegistry: ModelRegistry.create(authStorage, dir + "/models.json"),
}});
const stats = session.getSessionStats();
process.stdout.write(JSON.stringify({{ tokens: stats.tokens, cost: stats.cost }}));
"""


def test_pi_counts_the_tokens_and_cost_we_record(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    reason = pi_unavailable()
    if reason is not None:
        pytest.skip(reason)
    from pi_compact.llm.protocol import ModelInfo
    from pi_compact.usage import session_totals

    h = make_harness(scripted_server, tmp_path, info=ModelInfo("openai/gpt-4o-mini", "openai", 128_000, None))
    scripted_server.enqueue(Reply(text="Hi.", prompt_tokens=1_200, completion_tokens=30),
                            Reply(text="Done.", prompt_tokens=2_500, completion_tokens=60, cached_tokens=1_000))
    h.session.prompt("Say hi.")
    h.session.prompt("Now stop.")
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    done = subprocess.run(["node", "--input-type=module", "-e", PI_STATS_SCRIPT, str(h.path), str(tmp_path)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    ours = session_totals(SessionStore.open(h.path, str(h.cwd), 0).entries)
    assert theirs["tokens"] == {"input": 2_700, "output": 90, "cacheRead": 1_000, "cacheWrite": 0, "total": 3_790}
    assert theirs["tokens"]["total"] == ours.usage["totalTokens"]
    assert theirs["cost"] == pytest.approx(ours.cost)
    assert theirs["cost"] == pytest.approx(2_700 * 1.5e-07 + 90 * 6e-07 + 1_000 * 7.5e-08)


def test_pi_opens_a_session_with_our_automatic_recall_entries_and_leaves_them_out(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any
) -> None:
    from pi_compact.agent.compaction.recall import Excerpt, entry_fields

    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    compact(path, scripted_server, "first")
    store = SessionStore.open(path, str(path.parent), 0)
    store.append_message(user("What flag did we add to src/cli.py?"), 1)
    store.append(entry_fields([Excerpt("test-id-0", "user", "Add a --verbose flag to src/cli.py.")], 30), 2)
    store.append_message(assistant("--verbose", usage=usage(6000, 10)), 3)
    theirs = pi_context(path)
    assert roles(theirs) == ["compactionSummary", "user", "assistant", "user", "assistant"]
    assert theirs == our_context(path)


def test_pi_opens_a_session_compacted_on_the_chat_prefix(
    scripted_server: ScriptedServer, tmp_path: Path, pi_context: Any
) -> None:
    from dataclasses import replace

    from agent_harness import OVER_THRESHOLD, SETTINGS, UNDER_THRESHOLD, padded, summary_reply

    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, reuse_prefix="always"))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    scripted_server.enqueue(Reply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
                            Reply(text=padded("ANSWER-TWO"), prompt_tokens=OVER_THRESHOLD), summary_reply())
    h.session.prompt(padded("QUESTION-ONE", 600))
    h.session.prompt(padded("QUESTION-TWO", 600))
    [entry] = [e for e in h.entries() if e["type"] == "compaction"]
    assert entry["details"]["summaryRequest"]["shape"] == "prefix"
    assert scripted_server.requests[-1].get("tools")  # the summary was asked with the chat request's tools
    theirs = pi_context(h.path)
    assert roles(theirs)[0] == "compactionSummary"
    assert theirs == our_context(h.path)
