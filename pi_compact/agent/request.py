"""What the agent sends each turn: its system prompt, the live context as LLM messages, its tools.

The one place a turn's ``ChatRequest`` is put together, so whatever a request must carry besides
the conversation has one home: the pinned notes right after the system prompt, the recall hint
after the compaction summary when the ``recall`` tool is offered, and what automatic recall attached.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pi_compact.agent.tools import Tool
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.compaction.tokens import Estimator
from pi_compact.compaction.window import WindowPlan
from pi_compact.llm.protocol import ChatRequest, ToolSpec, empty_usage, fixed_text
from pi_compact.messages import Message, user_text_message
from pi_compact.session.history import RECALL_TOOL
from pi_compact.session.pins import Pin, PinTracker, with_pins
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings

SENT_KEPT = 64  # chat requests remembered for the prompt cache (a 5-minute cache holds far fewer turns)


@dataclass(frozen=True)
class Sent:
    """A chat request of this run and when it went out (what ``compaction/prefix_cost.py`` prices)."""

    request: ChatRequest
    at_ms: int


class RecallSource(Protocol):
    """What automatic recall (``agent/compaction/recall.py``'s ``AutoRecall``) offers the requests: the
    excerpts for the request after ``live``, recorded in ``store`` first; None when there are none. A seam,
    so building requests does not reach up into the compaction wing."""

    def attach(
        self, store: SessionStore, live: Sequence[Message], settings: CompactionSettings, now_ms: int,
        cleared: Collection[str] = (),
    ) -> str | None: ...


def tool_specs(tools: Sequence[Tool]) -> list[ToolSpec]:
    """The tools as a request offers them to the model."""
    return [ToolSpec(t.name, t.description, t.parameters) for t in tools]


def build_request(
    system_prompt: str, messages: Sequence[Message], tools: Sequence[Tool], pins: Sequence[Pin] = (),
    recalled: str | None = None, *, thinking: str | None = None, cache: str = "short", session_id: str | None = None,
    cut: int | None = None, plan: WindowPlan | None = None,
) -> ChatRequest:
    """The request for the next model call: ``max_tokens`` and the thinking budget are the ``plan``'s (the
    same on every request of the conversation; without a plan, or while the window is unknown, the model
    layer sizes them, ``llm.output_cap``); ``thinking``, ``cache``, ``session_id`` and ``cut`` (``cache_cut``:
    the planned compaction cut, marked for the prompt cache) are ``ChatRequest``'s.

    ``recalled``: original excerpts chosen by automatic recall (``agent.compaction.recall``), sent after
    the context as one user message for this request only (the session file records them)."""
    specs = tool_specs(tools)
    recall = any(spec.name == RECALL_TOOL for spec in specs)
    llm_messages = with_recall_hint(messages, recall)
    if recalled:
        timestamp = messages[-1].get("timestamp", 0) if messages else 0
        llm_messages.append({"role": "user", "content": [{"type": "text", "text": recalled}], "timestamp": timestamp})
    cap = plan.output_cap if plan is not None else 0
    budget = plan.thinking_budget if plan is not None and cap else None
    return ChatRequest(with_pins(system_prompt, pins), llm_messages, specs, cap or None, thinking=thinking,
                       cache=cache, session_id=session_id, cache_cut=cut, thinking_inside=cap > 0,
                       thinking_budget=budget, transient_tail=1 if recalled else 0)


def request_digest(request: ChatRequest, origin: str) -> str:
    """What identifies the prompt cache a request reads and writes, beside its messages: who sent it
    (``origin``: this program on this machine), its system prompt (with the pins), its tools and its
    thinking settings. Recorded on each reply (``requestDigest``), so a resumed session knows which of its
    prefixes this agent sent as it would send them now; a session pi or another machine wrote has none."""
    tools = [[t.name, t.description, dict(t.parameters)] for t in request.tools]
    fields = [origin, request.system, tools, request.thinking_level, request.thinking_budget]
    text = json.dumps(fields, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def default_origin() -> str:
    """This program on this machine: another machine's requests never warmed this one's cache entries."""
    return f"pi-compact@{platform.node()}"


def request_overhead(system_prompt: str, tools: Sequence[Tool], pins: Sequence[Pin], estimate: Estimator) -> int:
    """What every request carries besides the conversation (the system prompt with the pins, the tool
    definitions), estimated as a message is: providers count it in their usage, so an estimated context
    size must too, or it reads low right after a compaction (and on a fresh session, 0)."""
    return estimate(user_text_message(fixed_text(with_pins(system_prompt, pins), tool_specs(tools))))


class Requests:
    """Puts each turn's request together for one session: its system prompt and tools, the branch's pins
    (``PinTracker``) and what automatic recall (``recall``; None: nothing) attaches. Holds the store, never
    the session (the live context keeps ``overhead``; a reference back would keep the session file locked)."""

    def __init__(self, store: SessionStore, system_prompt: str, tools: Sequence[Tool],
                 now_ms: Callable[[], int], recall: RecallSource | None = None, origin: str | None = None) -> None:
        self._store, self._system_prompt, self._tools, self._now = store, system_prompt, list(tools), now_ms
        self.origin = origin or default_origin()
        self.pins = PinTracker()  # the pins of the current branch, sent after the system prompt
        self._recall = recall  # compacted originals the next request names, attached to it
        self.last: ChatRequest | None = None  # what the last turn sent: a summary may be asked on its prefix
        # This run's latest requests, newest last: what the provider's cache may hold (``prefix_cost``).
        self.sent: deque[Sent] = deque(maxlen=SENT_KEPT)
        self.sent_any = False  # whether this run sent a chat request at all (else the last run's may be cached)

    def _current_pins(self) -> Sequence[Pin]:
        return self.pins.current(self._store.customs_on_path, self._store.leaf_id)

    def next(self, messages: Sequence[Message], plan: WindowPlan, thinking: str,
             cleared: Collection[str] = (), cut: int | None = None) -> ChatRequest:
        """The request after ``messages`` (as sent: ``cleared`` are the entry ids of the tool results they
        carry as stubs); automatic recall, if it attaches anything, records it first. ``cut``: the planned
        compaction cut, marked for the prompt cache."""
        recalled = None if self._recall is None else self._recall.attach(
            self._store, messages, plan.settings.compaction, self._now(), cleared)
        self.last = self._build(messages, plan, thinking, recalled, cut)
        self.sent.append(Sent(self.last, self._now()))
        self.sent_any = True
        return self.last

    def forget(self) -> None:
        """Another model from now on: it holds none of what the requests so far left in a cache."""
        self.last = None
        self.sent.clear()

    def peek(self, messages: Sequence[Message], plan: WindowPlan) -> ChatRequest:
        """The request a turn would send after ``messages`` (as sent: cleared tool results as their stubs)
        now, without recall, recording nothing: what a summary is asked on when no chat request was sent in
        this run (a resume, ``compact FILE``)."""
        return self._build(messages, plan, plan.level or "off", None, None)

    def digest(self, request: ChatRequest) -> str:
        """``request_digest`` of ``request`` as this agent sends it."""
        return request_digest(request, self.origin)

    def _build(self, messages: Sequence[Message], plan: WindowPlan, thinking: str, recalled: str | None,
               cut: int | None) -> ChatRequest:
        cache = plan.settings.cache_retention or "short"  # PI_CACHE_RETENTION is the model layer's (llm.params)
        return build_request(self._system_prompt, messages, self._tools, self._current_pins(), recalled,
                             thinking=thinking, cache=cache, session_id=self._store.session_id or None, cut=cut,
                             plan=plan)

    def overhead(self, estimate: Estimator) -> int:
        """The system prompt with the pins and the tools, as the next request carries them, estimated."""
        return request_overhead(self._system_prompt, self._tools, self._current_pins(), estimate)


def failed_reply(error: str, now_ms: int) -> dict[str, Any]:
    """The assistant message recorded for a turn that failed before the model was reached."""
    return {
        "role": "assistant", "content": [], "api": "openai-completions", "provider": "", "model": "",
        "usage": empty_usage(), "stopReason": "error", "errorMessage": error, "timestamp": now_ms,
    }


__all__ = ["RecallSource", "Requests", "Sent", "build_request", "default_origin", "failed_reply", "request_digest",
           "request_overhead"]
