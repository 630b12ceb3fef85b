"""``OpenAICompatModel``: a ``ChatModel`` that talks to an OpenAI-compatible server directly.

Serves ``openai/<model>`` with an api base (``route`` decides when) without importing litellm. It sends
what litellm sends for such a model (``body``) and reads the answer as litellm reads it (``chunks``,
``failures``), so both paths give the same messages, errors and retries
(``tests/llm/test_llm_compat_parity.py``). Retries, timeouts and cancel are ``stream_loop``'s.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from pi_compact import __version__
from pi_compact.cancel import CancelToken
from pi_compact.llm import model_map
from pi_compact.llm.convert import Target
from pi_compact.llm.failures import Failure, FailureRaised
from pi_compact.llm.http_sse import EventStream, EventTooLarge, HttpStatusError, SseEvent, open_event_stream
from pi_compact.llm.openai.body import RequestEncoder
from pi_compact.llm.openai.chunks import ChunkReader, UsageEstimate
from pi_compact.llm.openai.compat import Wording
from pi_compact.llm.openai.failures import failure_of, status_failure
from pi_compact.llm.params import cache_retention, plan_request, prefix_by_default, refit_on_refusal
from pi_compact.llm.protocol import ChatModel, ChatRequest, ModelInfo, StreamEvent
from pi_compact.llm.redact import known_secrets
from pi_compact.llm.stream_loop import stream_reply
from pi_compact.providers import direct_key_variable
from pi_compact.settings import RetrySettings

PLACEHOLDER_KEY = "no-key"  # what the litellm path sends to a server given without a key


class OpenAICompatModel(ChatModel):
    """A ``ChatModel`` for ``openai/<model>`` at ``api_base``, over plain HTTP(S) and SSE.

    Requests go to ``<api base>/chat/completions`` with ``Authorization: Bearer <key>`` (the given
    key, else ``OPENAI_API_KEY``, else a placeholder). ``estimate_usage`` counts a reply whose server
    reported no usage (the composition passes litellm's counter, so both paths count alike).
    """

    def __init__(
        self,
        info: ModelInfo,
        api_base: str,
        api_key: str | None = None,
        retry: RetrySettings | None = None,
        estimate_usage: UsageEstimate | None = None,
        prompt_progress: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._info = info
        self._extra_headers = dict(headers or {})  # models.json ``headers``, resolved (they win over ours)
        self._wording = Wording.of(info, api_base)
        self._api_base = api_base
        self._api_key = api_key
        self._retry = retry if retry is not None else RetrySettings()
        self._estimate_usage = estimate_usage
        self._ssl: ssl.SSLContext | None = None
        self._prompt_progress = prompt_progress
        self._encoder = RequestEncoder({"return_progress": True} if prompt_progress else None, Target.of(info),
                                       self._wording)
        self._reading: tuple[int, int, float] | None = None  # (read, total) tokens of the prompt, and when
        self._rate: float | None = None  # tokens a second the server last read a prompt at (its own timing)
        self._step: int | None = None  # tokens between two of its reports (its batch): how far the next one goes

    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def progress(self) -> str | None:
        """How far the server has read the prompt of the request under way, while it reads (only with
        ``prompt_progress``: llama.cpp's report, which a long prompt on the CPU takes minutes to reach).

        The server reports once per batch (512 tokens: 10-25 s apart on a busy 2-core laptop); more than
        ``QUIET_S`` after a report the count goes on at the reading rate measured so far, marked ``~``."""
        reading = self._reading
        if reading is None:
            return None
        read, total, at = reading
        waited = time.monotonic() - at
        if self.reading_rate and waited > QUIET_S:
            # Never past the next report's count: a later report must not move the count back.
            ahead = self._step - 1 if self._step else total
            guess = min(total - 1, read + ahead, int(read + self.reading_rate * waited))
            return f"Reading the prompt: ~{guess:,} / {total:,} tokens ({self.reading_rate:.0f}/s)…"
        return f"Reading the prompt: {read:,} / {total:,} tokens…"

    def _read(self, processed: int, total: int, elapsed_ms: int | None = None) -> float:
        """Record a reading report; how many seconds the next one may take: its batch at the rate this
        server read so far (this prompt's or the last one's; 0 while neither is known)."""
        if elapsed_ms and processed > 0 and elapsed_ms >= MIN_TIMED_MS:
            self.reading_rate = processed * 1000 / elapsed_ms
        last = self._reading
        if last is not None and last[1] == total and processed > last[0]:
            self._step = processed - last[0]
        self._reading = (processed, total, time.monotonic()) if processed < total else None
        if not self.reading_rate or not self._step or processed >= total:
            return 0.0
        return min(self._step, total - processed) / self.reading_rate

    @property
    def reading_rate(self) -> float | None:
        return self._rate

    @reading_rate.setter
    def reading_rate(self, rate: float | None) -> None:
        self._rate = rate

    @property
    def endpoint(self) -> str:
        """Where requests go, for error messages."""
        return self._api_base

    @property
    def prefix_by_default(self) -> bool:
        return prefix_by_default(self._info, self._api_base)

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        token = cancel or CancelToken()
        # A cap we chose that still overflowed is refitted from the refusal (``output_cap``), as on litellm.
        return refit_on_refusal(self._info, request, self._api_base, lambda sent: self._stream_once(sent, token))

    def _stream_once(self, request: ChatRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        key = self._api_key or os.environ.get(direct_key_variable()) or PLACEHOLDER_KEY
        options = plan_request(self._info, request, api_base=self._api_base).options
        data, messages = self._encoder.encode(request, self._info.model_id, options)
        facts = model_map.lookup(self._info.model)
        secrets = known_secrets((key, self._api_key, *self._extra_headers.values()), os.environ)
        headers = {**self._headers(key), **self._wording.headers(request, cache_retention(request))}
        return stream_reply(
            self._info,
            self._retry,
            endpoint=self.endpoint,
            open_stream=lambda: self._open(data, messages, headers),
            failure_of=failure_of,
            costs=self._info.costs if self._info.costs is not None else facts.costs if facts is not None else {},
            cancel=cancel,
            secrets=secrets,
        )

    def _headers(self, key: str) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"pi-compact/{__version__}",
        }
        # The OpenAI SDK (litellm's client) sends these when the environment names them.
        for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
            if os.environ.get(variable):
                headers[header] = os.environ[variable]
        headers.update(self._extra_headers)  # the user's own (a gateway's key header) win, as in pi
        return headers

    def _url(self) -> str:
        return self._api_base.rstrip("/") + "/chat/completions"

    def _timeout_s(self) -> float:
        # A backstop for the worker thread's socket; the timeouts users see are enforced in stream_loop.
        return max(self._retry.timeout_ms, self._retry.idle_timeout_ms) / 1000 + 1

    def _open(self, data: bytes, messages: list[dict[str, Any]], headers: Mapping[str, str]) -> Chunks:
        """Send the request; the chunks of the answer (a refused request raises its ``Failure``)."""
        stream = self._stream(data, headers)
        if not self._prompt_progress:
            return Chunks(stream, ChunkReader(self._info.model_id, messages, self._estimate_usage))
        reader = ChunkReader(self._info.model_id, messages, self._estimate_usage, on_progress=self._read)
        return Chunks(stream, reader, lambda: setattr(self, "_reading", None))

    def _stream(self, data: bytes, headers: Mapping[str, str]) -> EventStream:
        """POST ``data`` to this model's URL and return its event stream; a refusal raises its ``Failure``."""
        url = self._url()
        try:
            # One event may carry a whole reply (JSON escapes can double it); no line may grow without end.
            return open_event_stream(url, data, headers, self._timeout_s(), self._ssl_context(),
                                     max_event_bytes=2 * self._retry.max_reply_bytes + 65536)
        except HttpStatusError as error:
            raise FailureRaised(status_failure(error.status, error.body, reason=error.reason, url=url)) from None

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not self._api_base.startswith("https:"):
            return None
        if self._ssl is None:
            self._ssl = _default_ssl_context()
        return self._ssl


# After a progress report, how long its count is shown as reported before the estimate moves it on; and
# the least reading time a rate is measured over (the first batch's few milliseconds say nothing).
QUIET_S = 1.0
MIN_TIMED_MS = 1000


class Reader(Protocol):
    """Reads the events of one answer into assembler-ready chunks (``ChunkReader``, the Responses reader)."""

    def chunks(self, events: Iterable[SseEvent]) -> Iterator[dict[str, Any]]: ...


class Chunks:
    """An open answer: iterating yields assembler-ready chunks; ``close()`` drops the connection."""

    def __init__(self, stream: EventStream, reader: Reader, ended: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self._reader = reader
        self._ended = ended  # however the answer ends, the prompt is no longer being read

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            yield from self._reader.chunks(self._stream)
        except EventTooLarge as error:
            raise FailureRaised(Failure("endless", f"{error} (twice retry.provider.maxReplyBytes)")) from None
        finally:
            if self._ended is not None:
                self._ended()

    def close(self) -> None:
        self._stream.close()


def _default_ssl_context() -> ssl.SSLContext:
    """Certificates as httpx (litellm's HTTP stack) finds them: SSL_CERT_FILE/DIR, else certifi's bundle."""
    cafile = os.environ.get("SSL_CERT_FILE")
    capath = os.environ.get("SSL_CERT_DIR")
    if not cafile and not capath:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:  # no bundle: the system's store
            pass
    return ssl.create_default_context(cafile=cafile, capath=capath)
