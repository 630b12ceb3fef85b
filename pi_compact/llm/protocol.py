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
from pi_compact.llm.providers import pi_api
from pi_compact.llm.server_compaction import CompactionEdit
from pi_compact.messages import Message

if TYPE_CHECKING:
    from pi_compact.llm.failures import FailureKind

ABORTED_MESSAGE = "Request was aborted"


@dataclass(frozen=True)
class ModelInfo:
    """What the agent needs to know about a model.

    ``model`` is the litellm model string; ``provider`` is pi's name for its provider (``providers``).
    """

    model: str
    provider: str
    context_window: int
    max_output_tokens: int | None
    reasoning: bool = False
    # Where ``context_window`` came from: "flag", "settings", "learned" (a provider's overflow error,
    # ``learned``) or "litellm" (its model data); shown by ``/context``.
    window_source: str = field(default="litellm", compare=False)  # not part of what the model *is*
    # How requests are worded, for a model of pi's ``models.json`` (``custom_models.py``): its ``api``
    # (None: pi's api of ``provider``), the role of the system prompt ("developer" where pi sends it),
    # whether ``reasoning_effort`` may be sent (None: whenever a level is asked; litellm drops it where
    # unknown), and its prices in dollars per token (None: litellm's table).
    wire_api: str | None = field(default=None, compare=False)
    system_role: str = field(default="system", compare=False)
    reasoning_effort: bool | None = field(default=None, compare=False)
    costs: Mapping[str, float] | None = field(default=None, compare=False)
    # The server's own words for an overflow, beside the known ones (``overflow.py``): settings'
    # ``models.<name>.overflowTexts`` and models.json's ``overflowTexts``.
    overflow_texts: tuple[str, ...] = field(default=(), compare=False)
    # The provider's own compaction for this model (``providers.ANTHROPIC_COMPACTION`` or
    # ``OPENAI_COMPACTION``; None: none): its provider row's, for the models the row and models.json say.
    server_compaction: str | None = field(default=None, compare=False)

    @property
    def model_id(self) -> str:
        """The model's name without the provider prefix, as pi records it in assistant messages.

        The prefix is litellm's spelling, which ``provider`` (pi's spelling) need not repeat:
        ``gemini/gemini-2.5-pro`` is provider ``google``, id ``gemini-2.5-pro``.
        """
        return self.model.split("/", 1)[1] if "/" in self.model else self.model

    @property
    def api(self) -> str:
        """pi's name for the wire protocol of this model's replies (``providers.pi_api``)."""
        return self.wire_api or pi_api(self.provider)

    def is_same_model(self, provider: object, model: object) -> bool:
        """Does an assistant message's ``provider``/``model`` name this model?"""
        return model in (self.model, self.model_id) and provider in (None, self.provider)


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


StreamEvent = TextDelta | ThinkingDelta | ToolCallDelta | Retrying | Done


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
