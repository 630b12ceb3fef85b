"""``LiteLLMModel``: the ``ChatModel`` for every real provider, through litellm.

The only module that imports litellm, and only inside functions: ``import litellm`` takes ~5 s, so
the CLI starts without it and may call ``preload_litellm()`` from a background thread. Before the
first import the offline switches are set (no cost-map download, no warnings on stderr) and litellm's
printing and logging are silenced, because it would scribble over the terminal UI.

One ``stream()`` call = one assistant reply, with our own retries: litellm's are off
(``max_retries=0``; its ``num_retries`` needs tenacity, which is not installed). Transient failures
(429, 5xx, connection, timeout, an empty reply) are retried with exponential backoff while nothing has
been streamed yet; the classification lives in ``pi_compact.llm.retry``. The blocking litellm iteration
runs in a worker thread feeding a queue, so a cancel is honoured within ~0.1 s even while the server
has not sent its first byte.

Timeouts are ours, measured on that queue: a reply must start (first text, thinking or tool call)
within ``retry.provider.timeoutMs`` and then never stall longer than ``retry.provider.idleTimeoutMs``.
SSE keep-alive comments and empty chunks are not progress, so a server that only drips them still
times out (an HTTP read timeout alone never fires on such a stream). A reply with no content at all
(an empty answer, or a 200 body that is not a stream) is an error, not an answer. Every error text is
passed through ``pi_compact.llm.redact`` first, so an API key a server quotes never reaches the
session file, the terminal or JSON events.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import warnings
from collections.abc import Generator, Iterator
from types import ModuleType
from typing import Any, NamedTuple

from pi_compact.errors import AuthError
from pi_compact.llm.assemble import MessageAssembler
from pi_compact.llm.convert import to_openai_messages, to_openai_tools
from pi_compact.llm.overflow import is_context_overflow
from pi_compact.llm.protocol import (
    CancelToken,
    ChatRequest,
    Done,
    ModelInfo,
    Retrying,
    StreamEvent,
    aborted_message,
    now_ms,
)
from pi_compact.llm.redact import known_secrets, redact
from pi_compact.llm.retry import FailureReport, backoff_delay_ms, describe_failure
from pi_compact.settings import RetrySettings

# Providers that authenticate without an API key variable (cloud credential chains, local servers).
_AMBIENT_AUTH_PROVIDERS = frozenset(
    {"bedrock", "sagemaker", "vertex_ai", "vertex_ai_beta", "ollama", "ollama_chat"}
)
# Sent when the user points at their own server (api_base) without a key: the OpenAI SDK insists on one.
_PLACEHOLDER_KEY = "no-key"
_POLL_S = 0.05  # how often a waiting stream looks at its cancel token
_import_lock = threading.Lock()
_loaded: ModuleType | None = None


class ModelLookup(NamedTuple):
    """What litellm's bundled model map knows about a model (None when it does not know)."""

    context_window: int | None
    max_output_tokens: int | None
    reasoning: bool
    provider: str | None


def _litellm() -> ModuleType:
    """Import litellm once, offline and silent (thread-safe; later calls are a dict lookup)."""
    global _loaded
    with _import_lock:
        if _loaded is not None:
            return _loaded
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        import litellm

        litellm.suppress_debug_info = True  # otherwise it prints provider-list banners to stdout
        # Its pydantic deprecation warnings would land on stderr, under the UI.
        warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
            logger = logging.getLogger(name)
            logger.setLevel(logging.CRITICAL + 1)
            logger.propagate = False
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
        _loaded = litellm
        return litellm


def preload_litellm() -> None:
    """Pay litellm's import cost now (meant for a background thread at CLI start)."""
    _litellm()


def lookup_model_info(model: str) -> ModelLookup:
    """Context window (``max_input_tokens``), max output tokens, reasoning support and provider."""
    litellm = _litellm()
    try:
        provider: str | None = litellm.get_llm_provider(model)[1]
    except Exception:  # unknown provider prefix: litellm raises; the caller decides what to do
        provider = None
    try:
        info = litellm.get_model_info(model)
    except Exception:  # ModelNotMappedError and friends: the model is simply not in the map
        return ModelLookup(None, None, False, provider)
    window, output = info.get("max_input_tokens"), info.get("max_output_tokens")
    return ModelLookup(
        window if isinstance(window, int) else None,
        output if isinstance(output, int) else None,
        bool(info.get("supports_reasoning")),
        provider,
    )


def missing_credentials(model: str) -> list[str]:
    """Environment variables the model's provider needs for its key and does not have."""
    litellm = _litellm()
    try:
        provider = litellm.get_llm_provider(model)[1]
        status = litellm.validate_environment(model=model)
    except Exception:  # litellm cannot tell; let the request itself report the problem
        return []
    if provider in _AMBIENT_AUTH_PROVIDERS or status.get("keys_in_environment"):
        return []
    missing = [str(k) for k in status.get("missing_keys") or ()]
    return [k for k in missing if k.endswith(("_KEY", "_TOKEN"))]


def _model_costs(litellm: ModuleType, model: str) -> dict[str, float]:
    """Per-token prices from the bundled map (empty when unknown)."""
    try:
        info = litellm.get_model_info(model)
    except Exception:
        return {}
    keys = {
        "input": "input_cost_per_token",
        "output": "output_cost_per_token",
        "cacheRead": "cache_read_input_token_cost",
        "cacheWrite": "cache_creation_input_token_cost",
    }
    return {ours: float(info.get(theirs) or 0.0) for ours, theirs in keys.items()}


class LiteLLMModel:
    """A ``ChatModel`` backed by ``litellm.completion(stream=True)``."""

    def __init__(
        self,
        info: ModelInfo,
        api_base: str | None = None,
        api_key: str | None = None,
        retry: RetrySettings | None = None,
    ) -> None:
        self._info = info
        self._api_base = api_base
        self._api_key = api_key
        self._retry = retry if retry is not None else RetrySettings()

    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def endpoint(self) -> str:
        """Where requests go, for error messages."""
        return self._api_base or f"the {self._info.provider} API"

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        """Stream one reply. Raises ``AuthError`` here, before any request, when the key is missing."""
        litellm = _litellm()
        key = self._resolve_key()
        kwargs = self._completion_kwargs(request, key)
        secrets = known_secrets((key, self._api_key), os.environ)
        return self._events(litellm, kwargs, cancel or CancelToken(), secrets)

    def _resolve_key(self) -> str | None:
        if self._api_key:
            return self._api_key
        missing = missing_credentials(self._info.model)
        if not missing:
            return None  # litellm finds the key in the environment itself
        if self._api_base:
            return _PLACEHOLDER_KEY  # a local or self-hosted server usually needs no key
        raise AuthError(
            f"Model {self._info.model} needs an API key: set the environment variable "
            f"{' or '.join(missing)} and try again."
        )

    def _completion_kwargs(self, request: ChatRequest, api_key: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self._info.model,
            "messages": to_openai_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_retries": 0,
            # A backstop for the worker thread's socket; the timeouts users see are enforced in _attempt.
            "timeout": max(self._retry.timeout_ms, self._retry.idle_timeout_ms) / 1000 + 1,
        }
        if request.tools:
            kwargs["tools"] = to_openai_tools(request.tools)
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.reasoning:
            kwargs["reasoning_effort"] = request.reasoning
            kwargs["drop_params"] = True  # models without the knob just ignore it
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if api_key:
            kwargs["api_key"] = api_key
        return kwargs

    def _events(
        self, litellm: ModuleType, kwargs: dict[str, Any], cancel: CancelToken, secrets: tuple[str, ...]
    ) -> Iterator[StreamEvent]:
        timestamp = now_ms()
        costs = _model_costs(litellm, self._info.model)
        max_attempts = self._retry.max_retries + 1 if self._retry.enabled else 1
        attempt = 0
        while True:
            assembler = MessageAssembler(self._info, timestamp, costs)
            outcome = yield from self._attempt(litellm, kwargs, cancel, assembler)
            if outcome is _ABORTED:
                yield Done(aborted_message(self._info, assembler.content()))
                return
            if outcome is None:
                message = assembler.finish()
                if not self._is_empty_reply(message):
                    yield Done(message)
                    return
                report = FailureReport(
                    f"Empty reply from {self.endpoint}: no text and no tool call (the answer was empty or "
                    "not an OpenAI-compatible stream).",
                    retryable=True,
                )
            else:
                report = describe_failure(outcome, endpoint=self.endpoint)
            text = redact(report.text, secrets)
            if report.retryable and not assembler.started and attempt + 1 < max_attempts:
                delay_ms = backoff_delay_ms(attempt, self._retry)
                attempt += 1
                yield Retrying(attempt, max_attempts - 1, delay_ms, text)
                if cancel.wait(delay_ms / 1000):
                    yield Done(aborted_message(self._info))
                    return
                continue
            yield Done(assembler.finish(error=text))
            return

    def _is_empty_reply(self, message: dict[str, Any]) -> bool:
        """A plain stop with nothing in it; a silent overflow (usage past the window) is left to the caller."""
        return (
            message["stopReason"] == "stop"
            and not message["content"]
            and not is_context_overflow(message, self._info.context_window)
        )

    def _attempt(
        self, litellm: ModuleType, kwargs: dict[str, Any], cancel: CancelToken, assembler: MessageAssembler
    ) -> Generator[StreamEvent, None, BaseException | None]:
        """One HTTP request: yields deltas, returns None (complete), the failure, or ``_ABORTED``."""
        inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        stop = threading.Event()
        opened: list[Any] = []  # the litellm stream, once completion() returned it

        def work() -> None:
            try:
                response = litellm.completion(**kwargs)
                opened.append(response)
                for chunk in response:
                    if stop.is_set():
                        break
                    inbox.put(("chunk", chunk))
                inbox.put(("end", None))
            except BaseException as exc:  # every failure is data for the caller, never a crash
                inbox.put(("error", exc))
            finally:
                if stop.is_set():
                    _close_quietly(opened)

        worker = threading.Thread(target=work, name="litellm-stream", daemon=True)
        worker.start()
        deadline = time.monotonic() + self._retry.timeout_ms / 1000
        try:
            while True:
                if cancel.cancelled:
                    return _ABORTED
                try:
                    kind, payload = inbox.get(timeout=_POLL_S)
                except queue.Empty:
                    if time.monotonic() < deadline:
                        continue
                    if assembler.finish_reason is not None:
                        return None  # complete; the server just never closed the stream
                    return _NoProgress(self._retry, started=assembler.started)
                if kind == "chunk":
                    progressed = False
                    for event in assembler.feed(payload):
                        progressed = True
                        yield event
                    if progressed:
                        deadline = time.monotonic() + self._retry.idle_timeout_ms / 1000
                elif kind == "end":
                    return None
                else:
                    failure: BaseException = payload
                    return failure
        finally:
            # Done, failed, cancelled, or the consumer stopped iterating: stop the worker and drop the
            # socket. A worker still waiting for the first byte exits on its own (daemon thread).
            stop.set()
            _close_quietly(opened)


class _Aborted(Exception):
    """Marker outcome of an attempt the cancel token stopped (never raised)."""


class _NoProgress(TimeoutError):
    """Outcome of an attempt that made no progress in time (never raised; a TimeoutError, so retried)."""

    def __init__(self, retry: RetrySettings, *, started: bool) -> None:
        if started:
            text = (f"the reply stalled: nothing new for {retry.idle_timeout_ms / 1000:g} s "
                    "(retry.provider.idleTimeoutMs)")
        else:
            text = (f"no reply within {retry.timeout_ms / 1000:g} s (raise retry.provider.timeoutMs "
                    "for a slow server)")
        super().__init__(text)


_ABORTED = _Aborted()


def _close_quietly(opened: list[Any]) -> None:
    for response in opened:
        try:
            response.close()
        except Exception:  # closing a half-read stream may complain; it is closed either way
            pass
