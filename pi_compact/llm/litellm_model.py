"""``LiteLLMModel``: the ``ChatModel`` for every provider, through litellm.

The only module that imports litellm, and only inside functions (``import litellm`` takes seconds).
It says how to open one litellm stream and maps litellm's exceptions into ``Failure`` values; retries,
timeouts and cancel are ``stream_loop``'s (litellm's own retries are off: ``max_retries=0``).

Failed tool results reach Anthropic with ``is_error: true`` through one hook we own on litellm's Anthropic
request transformation (``_hook_anthropic_requests``): litellm's chat format has no such field, so its
converter drops it. Of the ways to send it, this one changes least: every other rule of litellm's
conversion, its HTTP path, stream parsing, usage and errors stay litellm's; the hook only adds the flag
afterwards, and only on messages carrying our own key (``convert.ERROR_FLAG``). Anthropic's native
``/v1/messages`` route would mean our own conversion and stream parser for everything, and rewriting the
body at the HTTP layer would need our own client (proxy and TLS settings) and a second JSON pass.
Anthropic's compaction edit goes as litellm's ``context_management`` (litellm adds its beta); a request
that sends a compaction block back declares a dormant edit, which the API requires (``server_compaction``),
and is sent again with the summary's text if the block is refused (``block_refusal``).
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from pi_compact.cancel import CancelToken
from pi_compact.errors import AuthError
from pi_compact.llm.assemble import WithIterations
from pi_compact.llm.block_refusal import BlockSwitch, recorded, text_on_refusal
from pi_compact.llm.cache_marks import with_cache_marks
from pi_compact.llm.convert import (
    ConvertedHistory,
    Target,
    failed_result_ids,
    flag_failed_results,
    to_openai_messages,
    to_openai_tools,
)
from pi_compact.llm.failures import Failure, chain, provider_text, root_text, weigh
from pi_compact.llm.model_map import ModelLookup
from pi_compact.llm.params import cache_retention, plan_request, prefix_by_default, refit_on_refusal
from pi_compact.llm.protocol import ChatModel, ChatRequest, ModelInfo, StreamEvent
from pi_compact.llm.redact import known_secrets
from pi_compact.llm.server_compaction import dormant_edit, mark_block, sends_block
from pi_compact.llm.stream_loop import stream_reply
from pi_compact.providers import AMBIENT_AUTH_PREFIXES, ANTHROPIC
from pi_compact.settings import RetrySettings

FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
# Sent when the user points at their own server (api_base) without a key: the OpenAI SDK insists on one.
_PLACEHOLDER_KEY = "no-key"
_import_lock = threading.Lock()
_loaded: ModuleType | None = None


def _litellm() -> ModuleType:
    """Import litellm once, offline and silent (thread-safe; later calls are a dict lookup).

    The offline switches come first (no cost-map download, no warnings on stderr); its printing and
    logging are silenced, because they would scribble over the terminal UI.
    """
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
        _quiet(litellm)
        _hook_anthropic_requests()
        _loaded = litellm
        return litellm


def _quiet(litellm: ModuleType) -> None:
    """Turn off litellm's per-call logging work that nobody reads here.

    For every streamed chunk, and again after the reply, litellm hands a log record to a worker thread:
    it prices the call (several model-table lookups each time) and first copies every message to
    shorten base64 images for the log, a deep copy of the whole context per call, most of the CPU of a
    long tool loop. No callback consumes those records (we register none). ``disable_streaming_logging``
    skips the per-chunk records, and a base64 limit of 0 skips the copy in the records that remain;
    the limit is read from its module at call time, so setting it after the import works. Neither
    changes what the stream yields (the usage of the last chunk is built apart from the logging).
    """
    from litellm.litellm_core_utils import logging_utils

    setattr(litellm, "disable_streaming_logging", True)  # noqa: B010 - a ModuleType to mypy
    setattr(logging_utils, "MAX_BASE64_LENGTH_FOR_LOGGING", 0)  # noqa: B010 - litellm declares it Final


def _hook_anthropic_requests() -> None:
    """Register our subclass of litellm's Anthropic chat config, which marks failed tool results.

    litellm looks the config up per request in its provider table; the table has no public setter, so
    the entry is replaced only when it is litellm's own class, else left alone (the flag is then not
    sent, and ``test_provider_anthropic`` fails). The subclass changes nothing for a request without
    ``ERROR_FLAG``. Called once, under the import lock.
    """
    from litellm.litellm_core_utils.prompt_templates.factory import sanitize_anthropic_tool_use_id
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    class ErrorFlaggingAnthropicConfig(AnthropicConfig):
        def transform_request(
            self, model: str, messages: list[Any], optional_params: dict[Any, Any],
            litellm_params: dict[Any, Any], headers: dict[Any, Any],
        ) -> dict[Any, Any]:
            # litellm rewrites ids as it converts; ours are already clean, but match its spelling anyway.
            failed = {sanitize_anthropic_tool_use_id(call_id) for call_id in failed_result_ids(messages)}
            data: dict[Any, Any] = super().transform_request(model, messages, optional_params, litellm_params,
                                                             headers)
            if failed:
                flag_failed_results(data.get("messages") or (), failed)
            return data

    current = ProviderConfigManager.get_provider_chat_config(model="claude", provider=LlmProviders.ANTHROPIC)
    table = getattr(ProviderConfigManager, "_PROVIDER_CONFIG_MAP", None)  # built by the lookup above
    if type(current) is AnthropicConfig and isinstance(table, dict) and LlmProviders.ANTHROPIC in table:
        table[LlmProviders.ANTHROPIC] = (ErrorFlaggingAnthropicConfig, False)


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
    marked = info.get("supports_anthropic_compaction")
    return ModelLookup(
        window if isinstance(window, int) else None,
        output if isinstance(output, int) else None,
        bool(info.get("supports_reasoning")),
        provider,
        marked if isinstance(marked, bool) else None,
    )


def missing_credentials(model: str) -> list[str]:
    """Environment variables the model's provider needs for its key and does not have."""
    litellm = _litellm()
    try:
        provider = litellm.get_llm_provider(model)[1]
        status = litellm.validate_environment(model=model)
    except Exception:  # litellm cannot tell; let the request itself report the problem
        return []
    if provider in AMBIENT_AUTH_PREFIXES or status.get("keys_in_environment"):
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
        "cacheWrite1h": "cache_creation_input_token_cost_above_1hr",  # writes kept an hour cost more
    }
    return {ours: float(info.get(theirs) or 0.0) for ours, theirs in keys.items()}


class LiteLLMModel(ChatModel):
    """A ``ChatModel`` backed by ``litellm.completion(stream=True)``."""

    def __init__(
        self,
        info: ModelInfo,
        api_base: str | None = None,
        api_key: str | None = None,
        retry: RetrySettings | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._info = info
        self._api_base = api_base
        self._api_key = api_key
        self._headers = dict(headers or {})  # models.json ``headers``, resolved
        self._retry = retry if retry is not None else RetrySettings()
        self._history = ConvertedHistory()  # converts only what the context gained since the last call
        self._history_lock = threading.Lock()
        self._blocks = BlockSwitch(Target.of(info))  # its target's ``blocks`` off once the provider refused one

    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def endpoint(self) -> str:
        """Where requests go, for error messages."""
        return self._api_base or f"the {self._info.provider} API"

    @property
    def prefix_by_default(self) -> bool:
        return prefix_by_default(self._info, self._api_base)

    def preload(self) -> None:
        preload_litellm()

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        """Stream one reply. Raises ``AuthError`` here, before any request, when the key is missing.

        When the cap we chose (the request had none) still made prompt + ``max_tokens`` exceed the
        window, the refusal states the true prompt size: the request is sent once more with the cap
        that fits (``output_cap.refit_cap``), not reported as an overflow the caller would compact for.
        """
        key = self._resolve_key()
        token = cancel or CancelToken()
        return refit_on_refusal(self._info, request, self._api_base,
                                lambda sent: self._stream_once(sent, key, token))

    def _stream_once(self, request: ChatRequest, key: str | None, cancel: CancelToken) -> Iterator[StreamEvent]:
        litellm = _litellm()
        kwargs = self._completion_kwargs(request, key)
        failures: list[Failure] = []  # what each attempt failed with (``block_refusal`` reads the last)
        costs = self._info.costs if self._info.costs is not None else _model_costs(litellm, self._info.model)
        events = stream_reply(self._info, self._retry, endpoint=self.endpoint, costs=costs, cancel=cancel,
                              open_stream=lambda: WithIterations(litellm.completion(**kwargs)),
                              failure_of=recorded(litellm_failure, failures),
                              secrets=known_secrets((key, self._api_key, *self._headers.values()), os.environ))
        if self._info.api != ANTHROPIC or not sends_block(kwargs["messages"]):
            return events
        return text_on_refusal(events, failures, self._blocks.remember, lambda: self._stream_once(request, key, cancel))

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

    def _messages(self, request: ChatRequest) -> list[dict[str, Any]]:
        with self._history_lock:
            return self._history.convert(request.system, request.messages, self._blocks.target)

    def _completion_kwargs(self, request: ChatRequest, api_key: str | None) -> dict[str, Any]:
        messages = self._messages(request)
        tools = to_openai_tools(request.tools) if request.tools else []
        retention = cache_retention(request)
        compat = self._info.compat
        if self._info.api == ANTHROPIC and retention != "none":
            long = retention == "long" and compat.supports_long_cache_retention is not False
            control = {"type": "ephemeral", **({"ttl": "1h"} if long else {})}
            target = self._blocks.target
            cut = request.cache_cut
            if cut is not None:  # the planned cut as a count of converted messages (the system prompt included)
                cut = len(to_openai_messages(request.system, request.messages[:cut], target))
            end = None
            if request.transient_tail:  # the context's own end, before what this request alone carries
                kept = request.messages[: len(request.messages) - request.transient_tail]
                end = len(to_openai_messages(request.system, kept, target))
            messages = with_cache_marks(messages, tools, control, cut, end)
            messages = mark_block(messages, control)
        kwargs: dict[str, Any] = {
            "model": self._info.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_retries": 0,
            # A backstop for the worker thread's socket; the timeouts users see are enforced in stream_loop.
            "timeout": max(self._retry.timeout_ms, self._retry.idle_timeout_ms) / 1000 + 1,
        }
        if tools:
            kwargs["tools"] = tools
        # The output cap, thinking and the prompt-cache key (``params``); ``drop_params`` lets a model
        # without a reasoning knob ignore it.
        kwargs.update(plan_request(self._info, request, api_base=self._api_base).options)
        if self._info.api == ANTHROPIC:  # its compaction edit: asked, else dormant where a block goes back
            edit = request.compaction or (dormant_edit(self._info.context_window) if sends_block(messages) else None)
            if edit is not None:
                kwargs["context_management"] = {"edits": [edit.wire()]}
        headers = {**(kwargs.get("extra_headers") or {}), **self._headers}
        if self._info.api == ANTHROPIC and tools and compat.supports_eager_tool_input_streaming is False:
            # pi's beta for a server that cannot take per-tool eager input streaming (``compat``)
            beta = [FINE_GRAINED_TOOL_STREAMING_BETA, *filter(None, [headers.get("anthropic-beta")])]
            headers["anthropic-beta"] = ",".join(beta)
        if headers:
            kwargs["extra_headers"] = headers
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if api_key:
            kwargs["api_key"] = api_key
        return kwargs


def litellm_failure(exc: BaseException) -> Failure:
    """What a litellm call's exception (or one of the HTTP stack under it) says went wrong.

    litellm's own classes are trusted first: ``ContextWindowExceededError`` is an overflow,
    ``RateLimitError`` a rate limit. A timeout or a refused connection anywhere in the exception's
    chain (litellm's, the OpenAI SDK's, httpx's, httpcore's or Python's) is one, reported with the innermost
    cause's words; otherwise the status and the provider's sentence from the body decide.
    """
    import httpcore
    import httpx
    import openai

    litellm = _litellm()
    status = getattr(exc, "status_code", None)  # litellm's exceptions have it; httpx's and Python's do not
    status = status if isinstance(status, int) else None
    body = _response_text(exc)
    message = str(getattr(exc, "message", "") or exc)
    timeouts = (litellm.Timeout, openai.APITimeoutError, httpx.TimeoutException, httpcore.TimeoutException,
                TimeoutError)
    refusals = (litellm.APIConnectionError, openai.APIConnectionError, httpx.ConnectError, httpx.ReadError,
                httpx.RemoteProtocolError, httpcore.ConnectError, httpcore.ReadError, httpcore.RemoteProtocolError,
                ConnectionError)
    errors = list(chain(exc))
    return weigh(
        text=provider_text(body, message, status),
        status=status,
        body=body,
        overflow=isinstance(exc, litellm.ContextWindowExceededError),
        rate_limited=isinstance(exc, (litellm.RateLimitError, openai.RateLimitError)),
        timed_out=any(isinstance(error, timeouts) for error in errors),
        disconnected=any(isinstance(error, refusals) for error in errors),
        root=root_text(exc),
        name=type(exc).__name__,
    )


def _response_text(exc: BaseException) -> str:
    """The raw HTTP error body, when the exception carries a read response."""
    response = getattr(exc, "response", None)
    try:
        text = getattr(response, "text", "")
    except Exception:  # an unread streaming response raises on .text; there is just no body then
        return ""
    return text if isinstance(text, str) else ""


def estimate_stream_usage(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    text: str,
    thinking: str,
    calls: Sequence[Mapping[str, str]],
) -> tuple[int, int]:
    """Prompt and completion tokens as litellm estimates them for a stream that reported no usage.

    Handed to the direct OpenAI-compatible client by the composition: it reproduces litellm's stream
    builder, which counts the request's messages and the reply (its text, its tool calls as JSON,
    plus its reasoning) with ``token_counter``.
    """
    litellm = _litellm()
    from litellm.litellm_core_utils.prompt_templates.common_utils import get_content_from_model_response

    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}
            for call in calls
        ]
    response = litellm.ModelResponse(choices=[{"index": 0, "message": message, "finish_reason": "stop"}])
    output = get_content_from_model_response(response)
    try:
        prompt = int(litellm.token_counter(model=model, messages=list(messages)))
    except Exception:  # litellm counts 0 when its counter fails
        prompt = 0
    reasoning = int(litellm.token_counter(text=thinking, count_response_tokens=True)) if thinking else 0
    completion = int(litellm.token_counter(model=model, text=output, count_response_tokens=True)) + reasoning
    return prompt, completion
