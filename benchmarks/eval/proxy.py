"""A recording pass-through in front of the model server, so both agents are measured the same way.

Both agents talk to ``proxy.base_url``; each request is forwarded to the upstream OpenAI-compatible
base URL (with the upstream's own key), streamed back as it arrives (a slow local model must not trip
a first-byte timeout), and recorded under the current ``tag``: the request body, the assembled reply
text, the usage and llama.cpp ``timings`` the server reported, and the seconds it took. With
``temperature`` set, every chat request is sent with that temperature (greedy decoding at 0). With
``cold_summaries`` every summarizer request asks llama.cpp not to reuse its prompt cache
(``cache_prompt: false``), so compaction times compare on the same footing. With ``floor`` set, a summarizer
request is not forwarded: the proxy answers it itself with ``FLOOR_SUMMARY``, pi's six sections with
nothing in them, so what the compaction entry then holds is what the agent's code added (the code-only
floor); chat requests still go to the model.
A request is a summarizer request when it offers no tools and wraps a conversation in
``<conversation>`` tags (both agents' summary prompts do); everything else is a chat turn.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pi_compact.compaction.prompts import history_instruction


@dataclass
class Exchange:
    """One request through the proxy."""

    tag: str
    kind: str  # "summarizer" or "chat"
    request: dict[str, Any]
    status: int = 0
    reply: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"tag": self.tag, "kind": self.kind, "status": self.status, "seconds": round(self.seconds, 3),
                "usage": self.usage, "timings": self.timings, "reply": self.reply, "request": self.request}


# The summary a model that keeps nothing would write: the sections, each empty.
FLOOR_SUMMARY = """## Goal
- (none)

## Constraints & Preferences
- (none)

## Progress
### Done
- (none)

### In Progress
- (none)

### Blocked
- (none)

## Key Decisions
- (none)

## Next Steps
- (none)

## Critical Context
- (none)"""


def floor_reply(body: dict[str, Any]) -> tuple[str, bytes]:
    """(content type, body) of the floor's answer, streamed as server-sent events when asked to."""
    model = str(body.get("model") or "floor")
    usage = {"prompt_tokens": 0, "completion_tokens": len(FLOOR_SUMMARY) // 4,
             "total_tokens": len(FLOOR_SUMMARY) // 4}
    if not body.get("stream"):
        return "application/json", json.dumps({
            "id": "floor", "object": "chat.completion", "created": 0, "model": model, "usage": usage,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": FLOOR_SUMMARY}}]}).encode()
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": FLOOR_SUMMARY}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"choices": [], "usage": usage}]
    head = {"id": "floor", "object": "chat.completion.chunk", "created": 0, "model": model}
    events = "".join(f"data: {json.dumps({**head, **chunk})}\n\n" for chunk in chunks)
    return "text/event-stream", (events + "data: [DONE]\n\n").encode()


# How a summary asked on the chat request's prefix begins: it carries the tools.
PREFIX_INSTRUCTION = history_instruction(False, None)[:40]


def request_kind(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    last = json.dumps(messages[-1].get("content"))
    if PREFIX_INSTRUCTION in last[:80]:
        return "summarizer"
    if body.get("tools"):
        return "chat"
    return "summarizer" if "<conversation>" in json.dumps(messages) else "chat"


def _absorb(exchange: Exchange, line: bytes) -> None:
    """Take what matters from one SSE ``data:`` line (or a whole JSON body)."""
    text = line.decode("utf-8", "replace").strip()
    if text.startswith("data:"):
        text = text[5:].strip()
    if not text or text == "[DONE]" or not text.startswith("{"):
        return
    try:
        event = json.loads(text)
    except ValueError:
        return
    for choice in event.get("choices") or ():
        delta = choice.get("delta") or choice.get("message") or {}
        exchange.reply += delta.get("content") or ""
    if event.get("usage"):
        exchange.usage = event["usage"]
    if event.get("timings"):
        exchange.timings = event["timings"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the reply ends when the connection closes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._forward(None)

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._forward(json.loads(raw or b"{}"))

    def _forward(self, body: dict[str, Any] | None) -> None:
        owner = self.server.owner
        if body is not None and owner.temperature is not None and "messages" in body:
            body["temperature"] = owner.temperature
        kind = request_kind(body or {})
        if body is not None and owner.cold_summaries and kind == "summarizer":
            # llama.cpp otherwise reuses whatever prefix a slot still holds: the baseline's summary request
            # matched ~1.8k tokens of ours' just before it and looked faster than it is.
            body["cache_prompt"] = False
        exchange = Exchange(owner.tag, kind, body or {"GET": self.path})
        started = time.monotonic()
        if body is not None and owner.floor and kind == "summarizer":
            content_type, payload = floor_reply(body)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.end_headers()
            self.wfile.write(payload)
            exchange.status, exchange.reply, exchange.seconds = 200, FLOOR_SUMMARY, time.monotonic() - started
            owner.record(exchange)
            return
        upstream = urllib.parse.urlsplit(owner.upstream)
        path = upstream.path.rstrip("/") + self.path.removeprefix("/v1")
        conn = http.client.HTTPConnection(upstream.hostname or "127.0.0.1", upstream.port or 80, timeout=3600)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {owner.upstream_key}"}
        try:
            conn.request(self.command, path, json.dumps(body).encode() if body is not None else None, headers)
            response = conn.getresponse()
            exchange.status = response.status
            self.send_response(response.status)
            self.send_header("Content-Type", response.getheader("Content-Type") or "application/json")
            self.end_headers()
            pending = b""
            while chunk := response.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    _absorb(exchange, line)
            _absorb(exchange, pending)
        except OSError as error:  # upstream gone or client hung up: keep the record of it
            exchange.reply += f"[proxy: {error}]"
        finally:
            conn.close()
            exchange.seconds = time.monotonic() - started
            owner.record(exchange)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: RecordingProxy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class RecordingProxy:
    """Forward to ``upstream`` (a ``.../v1`` base URL) and record every exchange."""

    def __init__(self, upstream: str, upstream_key: str = "sk-none", temperature: float | None = 0.0,
                 cold_summaries: bool = False) -> None:
        self.upstream = upstream
        self.upstream_key = upstream_key
        self.temperature = temperature
        self.cold_summaries = cold_summaries
        self.tag = ""
        self.floor = False  # answer summarizer requests with FLOOR_SUMMARY instead of asking the model
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._httpd = _Server(self)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def start(self) -> RecordingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def take(self, tag: str) -> list[Exchange]:
        """The exchanges recorded under ``tag``, oldest first."""
        with self._lock:
            return [e for e in self._exchanges if e.tag == tag]
