"""One assistant reply from a chunk stream: retries, timeouts, cancel and the final message.

Shared by the HTTP adapters: each supplies ``open_stream()`` (one request; an iterable of
chat-completion chunks, see ``assemble``) and ``failure_of`` (its exceptions as a ``Failure``).
Retries happen only before the first delta; every error text is redacted and made ``shown_text.server_text``
(no escape sequence, a few thousand characters at most). A reply that never ends is stopped at
``retry.max_reply_bytes`` of what it makes us hold or ``retry.max_reply_ms`` (an error keeping what streamed),
and the worker reading the socket waits while the consumer is behind, so memory stays bounded either way.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any

from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.llm.assemble import MessageAssembler
from pi_compact.llm.failures import Failure
from pi_compact.llm.overflow import is_context_overflow
from pi_compact.llm.protocol import ABORTED_MESSAGE, Done, ModelInfo, Retrying, StreamEvent, aborted_message
from pi_compact.llm.redact import redact
from pi_compact.llm.retry import backoff_delay_ms, describe
from pi_compact.llm.server_compaction import REPLY_KEY
from pi_compact.settings import RetrySettings
from pi_compact.shown_text import server_text

_POLL_S = 0.05  # how often a waiting stream looks at its cancel token
_INBOX_CHUNKS = 256  # chunks read ahead of the consumer at most (the worker waits for room)

OpenStream = Callable[[], Iterable[Any]]
FailureOf = Callable[[BaseException], Failure]  # an adapter's mapping


def stream_reply(
    info: ModelInfo,
    retry: RetrySettings,
    *,
    endpoint: str,
    open_stream: OpenStream,
    failure_of: FailureOf,
    costs: Mapping[str, float],
    cancel: CancelToken,
    secrets: tuple[str, ...],
) -> Iterator[StreamEvent]:
    """Stream one reply (with retries); always ends with exactly one ``Done``.

    The blocking iteration runs in a worker thread feeding a queue, so a cancel is honoured within
    ~0.1 s even before the server's first byte. A reply must start (text, thinking or a tool call)
    within ``retry.timeout_ms`` and then never stall longer than ``retry.idle_timeout_ms``
    (keep-alive comments and empty chunks are not progress; a server's report of how far it has read the
    prompt is: llama.cpp on a busy laptop reads 3-60 tokens a second, and a long prompt takes minutes
    before the first token, so each report gives it ``retry.idle_timeout_ms`` more, or three times what
    its next batch takes at the rate it reads, if that is longer). A reply with no
    content is an error, and so is one past ``retry.max_reply_bytes`` or ``retry.max_reply_ms`` (not
    retried; its content is kept).
    """
    timestamp = now_ms()
    max_attempts = retry.max_retries + 1 if retry.enabled else 1
    attempt = 0
    while True:
        assembler = MessageAssembler(info, timestamp, costs)
        outcome = yield from _attempt(open_stream, failure_of, retry, cancel, assembler)
        if outcome is not None and outcome.kind == "cancelled":
            yield Done(aborted_message(info, assembler.content()))
            return
        if outcome is None:
            message = assembler.finish()
            if not _is_empty_reply(message, info):
                yield Done(message)
                return
            outcome = Failure("empty_reply", "")
        report = describe(outcome, endpoint=endpoint)
        # What the server said reaches the terminal and the session file: no escape sequences, bounded.
        text = server_text(redact(report.text, secrets))
        if report.retryable and not assembler.started and attempt + 1 < max_attempts:
            delay_ms = backoff_delay_ms(attempt, retry)
            attempt += 1
            yield Retrying(attempt, max_attempts - 1, delay_ms, text, outcome.kind, outcome.status)
            if cancel.wait(delay_ms / 1000):
                yield Done(aborted_message(info))
                return
            continue
        yield Done(assembler.finish(error=text))
        return


def _is_empty_reply(message: dict[str, Any], info: ModelInfo) -> bool:
    """A plain stop with nothing in it (a compaction block counts); a silent overflow (usage past the window)
    is left to the caller."""
    return (
        message["stopReason"] == "stop"
        and not message["content"]
        and REPLY_KEY not in message
        and not is_context_overflow(message, info.context_window, info.overflow_texts)
    )


def _attempt(
    open_stream: OpenStream, failure_of: FailureOf, retry: RetrySettings, cancel: CancelToken,
    assembler: MessageAssembler,
) -> Generator[StreamEvent, None, Failure | None]:
    """One HTTP request: yields deltas, returns None (complete), the failure, or ``_ABORTED``."""
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue(_INBOX_CHUNKS)
    stop = threading.Event()
    opened: list[Any] = []  # the stream, once open_stream() returned it

    def put(item: tuple[str, Any]) -> None:
        while not stop.is_set():  # a full inbox waits for the consumer, or for the end of the attempt
            try:
                inbox.put(item, timeout=_POLL_S)
                return
            except queue.Full:
                continue

    def work() -> None:
        try:
            response = open_stream()
            opened.append(response)
            for chunk in response:
                if stop.is_set():
                    break
                put(("chunk", chunk))
            put(("end", None))
        except BaseException as exc:  # every failure is data for the caller, never a crash
            put(("error", exc))
        finally:
            if stop.is_set():
                _close_quietly(opened)

    worker = threading.Thread(target=work, name="model-stream", daemon=True)
    worker.start()
    deadline = time.monotonic() + retry.timeout_ms / 1000
    cutoff = time.monotonic() + retry.max_reply_ms / 1000
    try:
        while True:
            if cancel.cancelled:
                return _ABORTED
            if time.monotonic() > cutoff:
                return _endless(retry, by_time=True)
            try:
                kind, payload = inbox.get(timeout=_POLL_S)
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                if assembler.finish_reason is not None:
                    return None  # complete; the server just never closed the stream
                return _no_progress(retry, started=assembler.started)
            if kind == "chunk":
                progressed = False
                for event in assembler.feed(payload):
                    progressed = True
                    yield event
                if assembler.size > retry.max_reply_bytes:
                    return _endless(retry, by_time=False)
                if progressed:
                    deadline = time.monotonic() + retry.idle_timeout_ms / 1000
                elif isinstance(payload, dict) and READING_KEY in payload:  # still reading the prompt
                    deadline = max(deadline, time.monotonic() + _reading_wait(payload[READING_KEY], retry))
            elif kind == "end":
                return None
            else:
                return failure_of(payload)
    finally:
        # Done, failed, cancelled, or the consumer stopped iterating: stop the worker and drop the
        # socket. A worker still waiting for the first byte exits on its own (daemon thread).
        stop.set()
        _close_quietly(opened)


def _no_progress(retry: RetrySettings, *, started: bool) -> Failure:
    """An attempt that made no progress in time: a timeout, so retried."""
    if started:
        return Failure("timeout", f"the reply stalled: nothing new for {retry.idle_timeout_ms / 1000:g} s "
                                  "(retry.provider.idleTimeoutMs)")
    return Failure("timeout", f"no reply within {retry.timeout_ms / 1000:g} s (raise retry.provider.timeoutMs "
                              "for a slow server)")


def _endless(retry: RetrySettings, *, by_time: bool) -> Failure:
    """A reply stopped at a cap: the sentence names the cap and the setting that raises it."""
    if by_time:
        return Failure("endless", f"it was still streaming after {_duration(retry.max_reply_ms)} "
                                  "(retry.provider.maxReplyMs)")
    return Failure("endless", f"it passed {_megabytes(retry.max_reply_bytes)} without ending "
                              "(retry.provider.maxReplyBytes)")


def _duration(ms: int) -> str:
    seconds = ms / 1000
    return f"{seconds / 60:g} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:g} MB" if size >= 100_000 else f"{size:,} bytes"


# Set on a chunk that reports reading progress (``openai.chunks``): the server is alive, though silent; its
# value is how many seconds the next report may take at the rate the server read so far (0: not known).
READING_KEY = "x_reading"
# The next report is awaited this many times as long as the last batch took, at least ``idle_timeout_ms``:
# on a 2-core machine at load 15 one batch of 512 tokens took over 120 s (the default idle timeout).
READING_SLACK = 3


def _reading_wait(expected: Any, retry: RetrySettings) -> float:
    idle = retry.idle_timeout_ms / 1000
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and expected > 0:
        return max(idle, READING_SLACK * float(expected))
    return idle

_ABORTED = Failure("cancelled", ABORTED_MESSAGE)  # the outcome of an attempt the cancel token stopped


def _close_quietly(opened: list[Any]) -> None:
    for response in opened:
        try:
            response.close()
        except Exception:  # closing a half-read stream may complain; it is closed either way
            pass
