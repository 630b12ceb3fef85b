"""Shared setup for the agent tests: a real AgentSession on a real LiteLLMModel, or on a scripted one.

``make_harness``: only the model (the scripted OpenAI-compatible server) and the disk (tmp_path) are
fake. Every request the agent or the summarizer sends goes through litellm over HTTP and is recorded
by the server, so tests assert on what was really sent.

``make_model_harness``: the same session on ``pi_compact.llm.scripted.ScriptedModel`` instead, in
process (no server, no litellm); it records each ``ChatRequest``. For feature tests above the model
seam; the HTTP harness stays for what the adapter does to a request.

Scripted ``prompt_tokens`` become the reply's ``usage.input`` and therefore drive the threshold:
with ``WINDOW`` 10 000 and ``RESERVE`` 2 000 a reply reporting more than 8 000 tokens crosses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripted_server import Reply, ScriptedServer

from pi_compact.agent.compaction.pipeline import CompactionHooks
from pi_compact.agent.events import CompactionEnd, CompactionStart, SessionEvent
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import Tool, default_tools
from pi_compact.compaction.prompts import HISTORY_HEADINGS, SYSTEM_PROMPT
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.protocol import ChatRequest, ModelInfo
from pi_compact.llm.scripted import ScriptedModel, ScriptedReply
from pi_compact.messages import COMPACTION_SUMMARY_PREFIX
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

WINDOW = 10_000
RESERVE = 2_000
KEEP_RECENT = 150
INFO = ModelInfo("openai/scripted", "openai", WINDOW, None)
FAST_RETRY = RetrySettings(enabled=True, max_retries=2, base_delay_ms=1, max_delay_ms=5)
SETTINGS = Settings(
    compaction=CompactionSettings(reserve_tokens=RESERVE, keep_recent_tokens=KEEP_RECENT, token_estimator="chars4"),
    retry=FAST_RETRY,
)
AGENT_SYSTEM = "You are the agent under test."
OVER_THRESHOLD = WINDOW - RESERVE + 500  # prompt_tokens that cross the threshold
UNDER_THRESHOLD = 1_000

# A summary the validator accepts (every required heading on its own line).
SUMMARY = "\n".join(f"{heading}\n- scripted summary line" for heading in HISTORY_HEADINGS)


def summary_reply(**kwargs: Any) -> Reply:
    return Reply(text=SUMMARY, **kwargs)


def scripted_summary(**kwargs: Any) -> ScriptedReply:
    """``summary_reply`` for the in-process model."""
    return ScriptedReply(text=SUMMARY, **kwargs)


def padded(marker: str, tokens: int = 100) -> str:
    """Text that starts with ``marker`` and estimates to about ``tokens`` (chars/4)."""
    return (marker + " " + "lorem ipsum " * tokens * 4)[: tokens * 4]


@dataclass
class Harness:
    """An AgentSession wired to the scripted server, with every event it emitted."""

    session: AgentSession
    server: ScriptedServer
    path: Path
    cwd: Path
    events: list[SessionEvent] = field(default_factory=list)

    def agent_requests(self) -> list[dict[str, Any]]:
        """Requests made by the agent loop (they offer tools), oldest first."""
        return [r for r in self.server.requests if r.get("tools")]

    def summarizer_requests(self) -> list[dict[str, Any]]:
        """Requests made by the compaction summarizer (its own system prompt, no tools)."""
        return [r for r in self.server.requests if _system_of(r) == SYSTEM_PROMPT]

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if getattr(e, "type", None) == kind]

    def entries(self) -> list[dict[str, Any]]:
        """The session file's lines, parsed (header first)."""
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines()]


@dataclass
class ModelHarness:
    """An AgentSession on a ``ScriptedModel``, with every event it emitted."""

    session: AgentSession
    model: ScriptedModel
    path: Path
    cwd: Path
    events: list[SessionEvent] = field(default_factory=list)

    def agent_requests(self) -> list[ChatRequest]:
        """Requests made by the agent loop (they offer tools), oldest first."""
        return [r for r in self.model.history if r.tools]

    def summarizer_requests(self) -> list[ChatRequest]:
        """Requests made by the compaction summarizer (its own system prompt, no tools)."""
        return [r for r in self.model.history if r.system == SYSTEM_PROMPT]

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if getattr(e, "type", None) == kind]

    def entries(self) -> list[dict[str, Any]]:
        """The session file's lines, parsed (header first)."""
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines()]


def _system_of(request: dict[str, Any]) -> Any:
    messages = request.get("messages") or [{}]
    return messages[0].get("content") if messages[0].get("role") == "system" else None


_CREATED: list[Harness | ModelHarness] = []


def check_created_harnesses() -> None:
    """Assert start/end pairing on every harness made since the last call (run it at teardown)."""
    try:
        for harness in _CREATED:
            assert_compactions_paired(harness.events)
    finally:
        _CREATED.clear()


def make_harness(
    server: ScriptedServer,
    tmp_path: Path,
    *,
    settings: Settings = SETTINGS,
    hooks: CompactionHooks | None = None,
    auto_compact: bool = True,
    store: SessionStore | None = None,
    info: ModelInfo = INFO,
    extra_tools: Sequence[Tool] = (),
    system_prompt: str = AGENT_SYSTEM,
    thinking: str | None = None,
    now_ms: Callable[[], int] | None = None,
) -> Harness:
    cwd = tmp_path / "work dir ü"
    cwd.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "session.jsonl"
    model = LiteLLMModel(info, api_base=server.base_url, api_key="test", retry=settings.retry)
    events: list[SessionEvent] = []
    session = AgentSession(
        store=store or SessionStore.create(path, str(cwd), 1_700_000_000_000),
        model=model, settings=settings, tools=[*default_tools(), *extra_tools], system_prompt=system_prompt,
        cwd=cwd, emit=events.append, hooks=hooks, auto_compact=auto_compact, thinking=thinking,
        **({"now_ms": now_ms} if now_ms is not None else {}),
    )
    harness = Harness(session, server, path, cwd, events)
    _CREATED.append(harness)
    return harness


def make_model_harness(
    tmp_path: Path,
    *replies: str | ScriptedReply | BaseException,
    settings: Settings = SETTINGS,
    hooks: CompactionHooks | None = None,
    auto_compact: bool = True,
    info: ModelInfo = INFO,
    thinking: str | None = None,
    store: SessionStore | None = None,
    prefix_by_default: bool = False,
) -> ModelHarness:
    """``make_harness`` on an in-process ``ScriptedModel`` that will answer ``replies`` in order
    (``prefix_by_default``: as a provider with a prompt cache, where ``compaction.reusePrefix`` "auto" reuses)."""
    cwd = tmp_path / "work dir ü"
    cwd.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "session.jsonl"
    model = CachingScriptedModel(info, *replies) if prefix_by_default else ScriptedModel(info, *replies)
    events: list[SessionEvent] = []
    session = AgentSession(
        store=store or SessionStore.create(path, str(cwd), 1_700_000_000_000), model=model, settings=settings,
        tools=default_tools(), system_prompt=AGENT_SYSTEM, cwd=cwd, emit=events.append, hooks=hooks,
        auto_compact=auto_compact, thinking=thinking,
    )
    harness = ModelHarness(session, model, path, cwd, events)
    _CREATED.append(harness)
    return harness


class CachingScriptedModel(ScriptedModel):
    """A ``ScriptedModel`` that says its provider keeps a prompt cache."""

    @property
    def prefix_by_default(self) -> bool:
        return True


def chat_request_text(request: ChatRequest) -> str:
    """Everything a ``ChatRequest`` carries, as one string (for "is X in it" checks)."""
    return json.dumps(list(request.messages), ensure_ascii=False)


def summary_leads(request: ChatRequest) -> bool:
    """Does the request start with the compaction summary, wrapped as the agent sends it?"""
    first = request.messages[0]
    content = first.get("content")
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or ())
    return first.get("role") == "user" and text.startswith(COMPACTION_SUMMARY_PREFIX) and SUMMARY in text


def two_finished_turns(h: Harness) -> None:
    """Two finished turns under the threshold, so a later compaction has something to summarize."""
    h.server.enqueue(
        Reply(text=padded("EARLY-ANSWER"), prompt_tokens=UNDER_THRESHOLD),
        Reply(text=padded("LATER-ANSWER"), prompt_tokens=UNDER_THRESHOLD),
    )
    h.session.prompt(padded("EARLY-QUESTION"))
    h.session.prompt(padded("LATER-QUESTION"))


def request_text(request: dict[str, Any]) -> str:
    """Everything a request carries, as one string (for "is X in it" checks)."""
    return json.dumps(request.get("messages"), ensure_ascii=False)


def outside_summary(request: dict[str, Any] | ChatRequest) -> str:
    """Every message of a request except the compaction summary, as one string: what was not compacted.
    (The summary itself quotes the user's messages word for word in ``<user-messages>``, issue 41.)"""
    messages = request.messages if isinstance(request, ChatRequest) else request.get("messages") or []
    kept = []
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content or () if isinstance(p, dict))
        if not (message.get("role") == "user" and text.startswith(COMPACTION_SUMMARY_PREFIX)):
            kept.append(message)
    return json.dumps(kept, ensure_ascii=False)


def summary_in(request: dict[str, Any]) -> bool:
    """Does the request hold the compaction summary, wrapped as the agent sends it?"""
    first_after_system = request["messages"][1]
    content = first_after_system.get("content")
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    return first_after_system["role"] == "user" and text.startswith(COMPACTION_SUMMARY_PREFIX) and SUMMARY in text


def assert_compactions_paired(events: Sequence[SessionEvent]) -> list[tuple[CompactionStart, CompactionEnd]]:
    """Every CompactionStart is followed by exactly one CompactionEnd of the same reason, before the
    next start; returns the pairs. A lone end is allowed only for the overflow give-up (pi emits it
    without a start)."""
    pairs: list[tuple[CompactionStart, CompactionEnd]] = []
    open_start: CompactionStart | None = None
    for event in events:
        if isinstance(event, CompactionStart):
            assert open_start is None, "a compaction started before the previous one ended"
            open_start = event
        elif isinstance(event, CompactionEnd):
            if open_start is None:
                assert event.reason == "overflow" and event.result is None and event.error_message, event
                continue
            assert event.reason == open_start.reason
            pairs.append((open_start, event))
            open_start = None
    assert open_start is None, "a compaction started and never ended"
    return pairs
