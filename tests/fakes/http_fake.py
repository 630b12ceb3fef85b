"""The HTTP plumbing both fake providers share: a threaded server on 127.0.0.1 (port 0), request capture,
and writers for JSON answers and server-sent events.

A provider subclasses ``FakeHTTPServer`` and implements ``handle(exchange)``; each request arrives as an
``Exchange`` (path, query, lower-cased headers, raw body) with methods to answer it. HTTP/1.0 is used, so a
streamed answer ends when the connection closes and no chunked framing is involved.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

ReplyT = TypeVar("ReplyT")
RecordT = TypeVar("RecordT")
ServerT = TypeVar("ServerT", bound="FakeHTTPServer")


@dataclass
class Exchange:
    """One request and the means to answer it."""

    method: str
    path: str  # without the query string
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    raw_body: bytes
    _handler: BaseHTTPRequestHandler

    def json_body(self) -> Any:
        """The parsed body; raises ValueError on a body that is not JSON."""
        return json.loads(self.raw_body or b"{}")

    def send_json(
        self, status: int, obj: Mapping[str, Any] | list[Any], headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(obj).encode()
        self._handler.send_response(status)
        self._handler.send_header("Content-Type", "application/json")
        self._handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self._handler.send_header(name, value)
        self._handler.end_headers()
        self._handler.wfile.write(data)

    def start_events(self, headers: Mapping[str, str] | None = None) -> None:
        self._handler.send_response(200)
        self._handler.send_header("Content-Type", "text/event-stream")
        self._handler.send_header("Cache-Control", "no-cache")
        for name, value in (headers or {}).items():
            self._handler.send_header(name, value)
        self._handler.end_headers()

    def send_event(self, data: Mapping[str, Any], event: str | None = None, line_end: str = "\n") -> None:
        """One SSE event: an optional ``event:`` line, then the JSON ``data:`` line."""
        head = f"event: {event}{line_end}" if event else ""
        self._handler.wfile.write(f"{head}data: {json.dumps(data)}{line_end}{line_end}".encode())
        self._handler.wfile.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._dispatch("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def _dispatch(self, method: str) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.server.owner.handle(Exchange(method, url.path, query, headers, raw, self))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: FakeHTTPServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-stream causes a harmless broken pipe


class FakeHTTPServer:
    """Start/stop and the port; subclasses answer requests in ``handle``."""

    thread_name = "fake-provider"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def handle(self, exchange: Exchange) -> None:
        raise NotImplementedError

    def start(self) -> FakeHTTPServer:
        self._httpd = _Server(self)
        # A short poll interval keeps stop() quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self: ServerT) -> ServerT:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class ScriptedFake(FakeHTTPServer, Generic[ReplyT, RecordT]):
    """A fake provider with a queue of scripted replies (or a ``route`` choosing one from the request body)
    and a record of every request; ``fallback`` answers when nothing is scripted."""

    def __init__(self) -> None:
        super().__init__()
        self.route: Callable[[dict[str, Any]], ReplyT | None] | None = None
        self._queue: list[ReplyT] = []
        self._records: list[RecordT] = []

    def fallback(self) -> ReplyT:
        raise NotImplementedError

    def enqueue(self, *replies: ReplyT) -> None:
        with self.lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self.lock:
            return len(self._queue)

    @property
    def records(self) -> list[RecordT]:
        with self.lock:
            return list(self._records)

    def _keep(self, record: RecordT) -> None:
        with self.lock:
            self._records.append(record)

    def _next_reply(self, body: dict[str, Any]) -> ReplyT:
        with self.lock:
            routed = self.route(body) if self.route is not None else None
            if routed is not None:
                return routed
            if not self._queue:
                return self.fallback()
            head = self._queue[0]
            return head if getattr(head, "repeat", False) else self._queue.pop(0)


def pieces(text: str, parts: int = 3) -> list[str]:
    """Split text into up to ``parts`` non-empty pieces, so clients must join deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def canonical_json(value: Any) -> str:
    """Key-sorted, compact JSON: equal values give equal strings (used for hashes and signatures)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
