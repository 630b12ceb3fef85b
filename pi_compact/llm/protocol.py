"""The one seam between pi_compact and language models: values, stream events and ``ChatModel``.

``ChatModel.stream(request)`` yields deltas and always ends with exactly one ``Done(message)``, a
pi-shaped assistant dict (mirrors pi-ai). Provider failures do not raise: the message ends with
``stopReason`` "error" (``errorMessage``: the provider's text) or "aborted" (the ``CancelToken``
fired). Only a problem found before anything is sent (a missing API key: ``AuthError``) raises, from
the ``stream()`` call itself. Pure: no litellm, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.llm.server_compaction import CompactionEdit
from pi_compact.messages import Message
from pi_compact.model_facts import ModelInfo as ModelInfo  # the facts record lives on the ground floor

if TYPE_CHECKING:
    from pi_compact.llm.failures import FailureKind

ABORTED_MESSAGE = "Request was aborted"


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model; ``parameters`` is a JSON schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


def fixed_text(system: str, tools: Sequence[ToolSpec]) -> str:
    """What a request carries besides its messages (the system prompt, the tool definitions) as one
    text, for estimating its size the one way (providers count it in their usage)."""
    specs = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    return system + "\n" + json.dumps(specs, ensure_ascii=False)


@dataclass(frozen=True)
class ChatRequest:
    """One model call. ``messages`` are pi-shaped LLM messages (user / assistant / toolResult).

    ``thinking`` is pi's thinking level (off | minimal | low | medium | high | xhigh; ``llm.thinking``
    clamps one to what a model can do and maps it per provider); None sends nothing, so the provider's
    default applies. ``reasoning`` is the older spelling of the same knob, used when ``thinking`` is None.
    ``max_tokens`` None: the adapter sends the output cap of ``llm.output_cap`` (it leaves room in the
    window); a number is the answer's own size (a summary's), the thinking budget comes on top.
    ``cache`` is pi's ``cacheRetention`` (none | short | long): the prompt-cache breakpoints for
    providers that take them; ``session_id`` keys OpenAI's prompt cache (``prompt_cache_key``).
    """

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int | None = None
    reasoning: str | None = None
    thinking: str | None = None
    cache: str = "short"
    session_id: str | None = None
    # ``max_tokens`` is the whole output, thinking included (a cap refitted from a refusal); else a
    # caller's ``max_tokens`` is the answer's own and a thinking budget comes on top of it (pi's rule).
    thinking_inside: bool = False
    # A prompt-cache breakpoint after the first ``cache_cut`` messages, beside pi's three (Anthropic): the
    # planned compaction cut, so the summary request asked on that prefix reads what the chat request wrote.
    cache_cut: int | None = None
    # The provider's own compaction, asked of a model whose row has it (``server_compaction``); adapters of
    # other providers ignore it. The reply then carries the block (``server_compaction.REPLY_KEY``).
    compaction: CompactionEdit | None = None
    # The thinking budget planned for the conversation (``compaction.window``), sent as it is with
    # ``max_tokens`` (thinking inside): every chat request, and a summary asked on one's prefix, carries the
    # same. None: the level's budget, fitted to the room.
    thinking_budget: int | None = None
    # How many messages at the end this request alone carries (automatic recall's excerpts): the prompt cache
    # marks the context's end before them, since the next request will not carry them.
    transient_tail: int = 0

    @property
    def thinking_level(self) -> str | None:
        """The level asked for: ``thinking``, else ``reasoning``."""
        return self.thinking if self.thinking is not None else self.reasoning


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of tool call ``index``; ``id`` and ``name`` are the values known so far."""

    index: int
    id: str
    name: str
    arguments_fragment: str


@dataclass(frozen=True)
class Retrying:
    """A transient failure (rate limit, 5xx, connection) will be retried after ``delay_ms``.

    Emitted before anything else of the attempt that follows; the previous attempt produced no
    deltas (retries happen only before the first delta).
    """

    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    kind: FailureKind = "unknown"  # what failed (``llm.failures``): readers choose their words by it, not by the text
    # The HTTP status the failure reported, if any: adapters report a dropped connection or a throttling
    # text with different statuses, so two reports of one failure are equal by kind and words alone.
    status: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Done:
    """The final assistant message (pi shape); always the last event of a stream."""

    message: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Noted:
    """A line for the user about how the request was sent (not a failure): e.g. a refused compaction block
    resent as its readable summary. Comes before the deltas of the attempt it explains."""

    text: str


StreamEvent = TextDelta | ThinkingDelta | ToolCallDelta | Retrying | Noted | Done


class ChatModel(Protocol):
    """Anything that can stream one assistant reply: ``info`` and ``stream`` are required.

    The readiness members default to a model that can answer at once; adapters and fakes inherit the
    defaults by subclassing ``ChatModel``, and wrappers forward them (``WrappedModel``).
    """

    @property
    def info(self) -> ModelInfo: ...

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]: ...

    @property
    def ready(self) -> bool:
        """False while reading ``info`` or a request would wait for a start (a model still resolving,
        the local model's server)."""
        return True

    @property
    def progress(self) -> str | None:
        """What a start under way is doing, for a spinner (None: nothing to say)."""
        return None

    def wait_ready(self, cancel: CancelToken | None = None) -> bool:
        """Block until the model can answer; False when ``cancel`` fired first."""
        return True

    def preload(self) -> None:
        """Pay one-time start-up costs now, such as a slow library import (meant for a background thread)."""
        return None  # a body, not just the docstring: a subclass need not define it

    @property
    def prefix_by_default(self) -> bool:
        """Does ``compaction.reusePrefix: auto`` ask this model's summaries on the last chat request's
        prefix? True where the provider keeps that prefix (a prompt cache) and a summary asked there
        was not shown to keep less than the serialized one."""
        return False

    @property
    def reading_rate(self) -> float | None:
        """Tokens a second the server last read a prompt at, as it timed itself; None where it does not say
        (a cloud API). Only a server that reads slowly enough to report its progress (llama.cpp on a CPU:
        20-300 tokens a second) says: there a request's size is minutes of the user's wait."""
        return None


class WrappedModel(ChatModel):
    """A ``ChatModel`` around another one: every member is the wrapped model's unless overridden."""

    def __init__(self, model: ChatModel) -> None:
        self.wrapped = model

    @property
    def info(self) -> ModelInfo:
        return self.wrapped.info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        return self.wrapped.stream(request, cancel)

    @property
    def ready(self) -> bool:
        return self.wrapped.ready

    @property
    def progress(self) -> str | None:
        return self.wrapped.progress

    def wait_ready(self, cancel: CancelToken | None = None) -> bool:
        return self.wrapped.wait_ready(cancel)

    def preload(self) -> None:
        self.wrapped.preload()

    @property
    def prefix_by_default(self) -> bool:
        return self.wrapped.prefix_by_default

    @property
    def reading_rate(self) -> float | None:
        return self.wrapped.reading_rate


def complete(model: ChatModel, request: ChatRequest, cancel: CancelToken | None = None) -> dict[str, Any]:
    """Drain a stream and return its final assistant message."""
    final: dict[str, Any] | None = None
    for event in model.stream(request, cancel):
        if isinstance(event, Done):
            final = event.message
    if final is None:  # a ChatModel that breaks the contract; say so instead of returning garbage
        return error_message(model.info, "The model stream ended without a final message")
    return final


def empty_usage() -> dict[str, Any]:
    """pi's usage shape with every count and cost at zero."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }


def assistant_message(
    info: ModelInfo,
    content: list[dict[str, Any]],
    *,
    stop_reason: str,
    usage: dict[str, Any] | None = None,
    error: str | None = None,
    timestamp: int | None = None,
) -> dict[str, Any]:
    """Build a pi-shaped assistant message (``errorMessage`` only when ``error`` is given)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": info.api,
        "provider": info.provider,
        "model": info.model_id,
        "usage": usage if usage is not None else empty_usage(),
        "stopReason": stop_reason,
        "timestamp": timestamp if timestamp is not None else now_ms(),
    }
    if error is not None:
        message["errorMessage"] = error
    return message


def error_message(info: ModelInfo, text: str, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An assistant message that reports a failed call (``stopReason`` "error")."""
    return assistant_message(info, content or [], stop_reason="error", error=text)


def aborted_message(info: ModelInfo, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An assistant message for a cancelled call (``stopReason`` "aborted")."""
    return assistant_message(info, content or [], stop_reason="aborted", error=ABORTED_MESSAGE)
