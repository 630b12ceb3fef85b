"""POST a JSON body and read the server-sent events that answer it (stdlib only: ``http.client``).

``open_event_stream`` returns an ``EventStream`` once the headers are in, or raises ``HttpStatusError``
(a status other than 200, with its body). Iterating yields each event's ``data``, decoded as the
OpenAI Python SDK decodes it; ``close()`` is safe from any thread. Network failures raise the stdlib's
``OSError`` family or ``http.client.HTTPException``. A line or an event growing past ``max_event_bytes``
raises ``EventTooLarge``: a server that never ends a line must not fill memory. ``body()`` reads a plain
answer (JSON) whole instead.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

_READ_SIZE = 65536
# Error bodies are read for their message; a server that sends megabytes of HTML gets cut short.
_MAX_ERROR_BODY = 1 << 20


@dataclass(frozen=True)
class SseEvent:
    event: str | None
    data: str


class RemoteProtocolError(ConnectionError):
    """The server broke HTTP: it hung up before answering, or in the middle of a chunked body.

    A ``ConnectionError``, worded as httpx (litellm's HTTP stack) words it, so the user reads the same text.
    """


class EventTooLarge(ValueError):
    """One line or event of the stream grew past the limit without ending."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event of the stream passed {limit:,} bytes without ending")
        self.limit = limit


class HttpStatusError(Exception):
    """The server answered with a status other than 200."""

    def __init__(self, status: int, body: str, reason: str = "") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.reason = reason  # the status line's phrase ("Gateway Timeout")


def open_event_stream(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
    ssl_context: ssl.SSLContext | None = None,
    max_event_bytes: int | None = None,
) -> EventStream:
    """Send ``body`` to ``url`` (POST); the open event stream, or ``HttpStatusError``."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(host, parts.port, timeout=timeout, context=ssl_context)
    else:
        connection = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    stream = EventStream(connection, max_event_bytes)
    hung_up = False
    try:
        connection.request("POST", path, body=body, headers=dict(headers))
        try:
            response = connection.getresponse()
        except http.client.RemoteDisconnected:
            hung_up = True
        else:
            if response.status != 200:
                text = response.read(_MAX_ERROR_BODY).decode("utf-8", errors="replace")
                raise HttpStatusError(response.status, text, response.reason)
    except BaseException:
        stream.close()
        raise
    if hung_up:
        stream.close()
        raise RemoteProtocolError("Server disconnected without sending a response.")
    stream.attach(response)
    return stream


class EventStream:
    """The events of one response; iterate once. ``close()`` is safe from any thread, any time.

    Lines end in ``\\n``, ``\\r\\n`` or ``\\r``; ``:`` lines are comments; an event is dispatched at a
    blank line, its ``data:`` lines joined with ``\\n``; data starting with ``[DONE]`` ends the stream.
    ``close()`` shuts the socket down, which wakes a reader blocked in ``recv``.
    """

    def __init__(self, connection: http.client.HTTPConnection, max_event_bytes: int | None = None) -> None:
        self._connection = connection
        self._limit = max_event_bytes
        self._response: http.client.HTTPResponse | None = None
        self._lock = threading.Lock()
        self._closed = False

    def attach(self, response: http.client.HTTPResponse) -> None:
        self._response = response

    def __iter__(self) -> Iterator[SseEvent]:
        for event in _decode(self._lines(), self._limit):
            if event.data.startswith("[DONE]"):
                return
            yield event

    def _lines(self) -> Iterator[str]:
        """The body's lines, without line ends, each decoded as UTF-8 (as the SDK does)."""
        response = self._response
        if response is None:
            return
        pending: list[bytes] = []  # the start of a line that spans several reads
        pending_size = 0
        limit = self._limit
        skip_lf = False  # the previous read ended in "\r": a "\n" starting the next one belongs to it
        while True:
            try:
                chunk = response.read1(_READ_SIZE)
            except http.client.IncompleteRead:
                chunk = None
            if chunk is None:
                raise RemoteProtocolError(
                    "peer closed connection without sending complete message body (incomplete chunked read)")
            if not chunk:
                break
            if skip_lf and chunk[:1] == b"\n":
                chunk = chunk[1:]
            skip_lf = chunk[-1:] == b"\r"
            parts = chunk.splitlines(keepends=True)
            if parts and parts[-1][-1:] not in (b"\n", b"\r"):
                tail = parts.pop()
            else:
                tail = b""
            for part in parts:
                line = part[:-2] if part.endswith(b"\r\n") else part[:-1]
                if pending:
                    pending.append(line)
                    line = b"".join(pending)
                    pending.clear()
                    pending_size = 0
                yield line.decode("utf-8")
            if tail:
                pending.append(tail)
                pending_size += len(tail)
                if limit is not None and pending_size > limit:
                    raise EventTooLarge(limit)
        if pending:
            yield b"".join(pending).decode("utf-8")

    def body(self, limit: int) -> bytes:
        """The whole body of a plain (not event-stream) answer, such as a JSON one; past ``limit`` bytes
        ``EventTooLarge``."""
        response = self._response
        if response is None:
            return b""
        data = response.read(limit + 1)
        if len(data) > limit:
            raise EventTooLarge(limit)
        return data

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        sock = self._connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in another thread
            except OSError:
                pass
        self._connection.close()


def _decode(lines: Iterator[str], limit: int | None = None) -> Iterator[SseEvent]:
    """Server-sent events from lines, per the WHATWG rules the OpenAI SDK follows.

    As in the SDK, the last event id outlives its event, so after an ``id:`` line every blank line
    dispatches an event (with empty data, which then fails to parse as JSON, as it does there).
    """
    event: str | None = None
    data: list[str] = []
    size = 0  # characters of ``data`` so far (at most ``limit``)
    last_id: str | None = None
    retry: int | None = None
    for line in lines:
        if not line:
            if not event and not data and not last_id and retry is None:
                continue
            yield SseEvent(event, "\n".join(data))
            event, data, retry, size = None, [], None, 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
            size += len(value) + 1
            if limit is not None and size > limit:
                raise EventTooLarge(limit)
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry":
            try:
                retry = int(value)
            except ValueError:
                pass
