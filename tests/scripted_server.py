"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests (stdlib only).

It speaks ``POST /v1/chat/completions`` (streaming SSE and plain JSON), replays a queue of scripted
``Reply`` values in order and records every request body (a ``tool_calls[].id`` over 40 characters is
refused with OpenAI's 400, ``tool_id_refusal``, and keeps its reply for the next request), so a test can
drive the real litellm HTTP path and then assert both on what came back and on what was sent.

    server = ScriptedServer().start()
    server.enqueue(Reply(text="hi", prompt_tokens=120))
    ... LiteLLMModel(..., api_base=server.base_url, api_key="test") ...
    assert server.requests[0]["messages"][0]["role"] == "system"
    server.stop()

The server uses HTTP/1.0, so a streamed response ends when the connection closes (no chunked encoding
to get right). With an empty queue it answers with the text ``(no scripted reply)``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NO_SCRIPTED_REPLY = "(no scripted reply)"


@dataclass(frozen=True)
class ToolCallReply:
    """One tool call the scripted assistant makes; its JSON arguments are streamed in fragments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted answer to one request.

    With ``status`` != 200 the server sends ``error_body`` as JSON (or ``raw_error_body`` verbatim)
    with that status and nothing else.
    Misbehaving servers: ``hang`` never answers (the connection stays open until the server stops);
    ``drip_s`` > 0 streams the reply's deltas, then never finishes and sends an SSE keep-alive comment
    every ``drip_s`` seconds instead; ``garbage_body`` is sent verbatim as a 200 answer that is neither
    SSE nor JSON; ``echo_authorization`` answers ``status`` (401 when left at 200) with an error message
    that quotes the request's Authorization header, as some servers do.
    ``chunked=True`` streams with HTTP/1.1 chunked transfer encoding (as most real servers do), each
    write split over two chunks. ``close_without_answer`` drops the connection once the request is read,
    without a status line.
    ``endless`` streams the reply's deltas, then that text and a running number (``TEXT0\n``, ``TEXT1\n``...)
    as content deltas, one after the other (every
    ``chunk_delay_s``) until the client hangs up or the server stops; ``ScriptedServer.hung_up`` is set when
    the client hung up on it. With ``endless_line`` the text is written again and again inside one ``data:``
    line that never ends.
    ``repeat=True`` keeps the reply at the head of the queue forever (e.g. "500 forever").
    Usage is sent only when the request asked for it (``stream_options.include_usage``), as OpenAI does,
    and never with ``send_usage=False`` (servers that ignore the option). ``raw_events`` replaces the
    whole streamed answer: each string is sent as one ``data:`` line, verbatim (then ``[DONE]`` unless
    ``raw_done=False``), to imitate servers that send odd chunks.
    """

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCallReply, ...] = ()
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0
    finish_reason: str | None = None  # default: "tool_calls" when tool_calls, else "stop"
    delay_s: float = 0.0  # before the first byte
    chunk_delay_s: float = 0.0  # between streamed chunks
    status: int = 200
    error_body: Mapping[str, Any] | None = None
    raw_error_body: str | None = None  # sent verbatim instead of error_body (may be empty)
    repeat: bool = False
    hang: bool = False
    drip_s: float = 0.0
    garbage_body: str | None = None
    echo_authorization: bool = False
    send_usage: bool = True
    close_without_answer: bool = False
    raw_events: tuple[str, ...] | None = None
    raw_done: bool = True
    chunked: bool = False
    endless: str = ""
    endless_line: bool = False
    # Report usage as a tokenizer would count it, not ``prompt_tokens``/``completion_tokens``: the prompt from
    # what the request carries (``counted_prompt_tokens``), the completion from the reply's text and tool calls.
    count_tokens: bool = False

    @property
    def effective_finish_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


def error_reply(status: int, message: str, *, code: str | None = None, repeat: bool = False) -> Reply:
    """An OpenAI-shaped error body ``{"error": {"message", "type", "code"}}`` with the given status."""
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    return Reply(status=status, error_body=body, repeat=repeat)


def openai_context_overflow_reply(window: int = 128000, requested: int = 130000) -> Reply:
    """HTTP 400 as OpenAI sends it when the prompt is larger than the context window."""
    return error_reply(
        400,
        f"This model's maximum context length is {window} tokens. However, your messages resulted in "
        f"{requested} tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )


def anthropic_prompt_too_long_reply(tokens: int = 210000, maximum: int = 200000) -> Reply:
    """HTTP 400 with Anthropic's body for an oversized prompt (as a proxy would pass it through)."""
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {tokens} tokens > {maximum} maximum",
        },
    }
    return Reply(status=400, error_body=body)


def echo_authorization_reply(status: int = 401, repeat: bool = False) -> Reply:
    """An error whose message quotes the request's Authorization header (the API key)."""
    return Reply(status=status, echo_authorization=True, repeat=repeat)


def rate_limit_reply(repeat: bool = False) -> Reply:
    """HTTP 429 whose text mentions "too many tokens": a rate limit, never a context overflow."""
    return error_reply(
        429, "Rate limit reached: too many tokens per min", code="rate_limit_exceeded", repeat=repeat
    )


def server_error_reply(status: int = 500, repeat: bool = False) -> Reply:
    """A 5xx error (repeat=True for "fails forever")."""
    return error_reply(
        status, f"The server had an error while processing your request ({status})", repeat=repeat
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the response ends when the connection closes: simplest SSE framing
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature is the stdlib's
        pass  # keep pytest output clean

    def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body: dict[str, Any] = json.loads(raw or b"{}")
        headers = {key.lower(): value for key, value in self.headers.items()}
        refusal = tool_id_refusal(body)
        if refusal is not None:  # refused as OpenAI refuses it; the scripted reply stays for the next request
            self.server.owner._record_only(body, headers)
            self._json(400, refusal)
            return
        for check in self.server.owner.checks:  # what this server's own rules refuse (``fakes.chat_checks``)
            refused = check(body, headers)
            if refused is not None:
                self.server.owner._record_only(body, headers)
                self._json(refused[0], refused[1])
                return
        reply = self.server.owner._record_and_next(body, headers)
        if reply.delay_s and self.server.owner._stopping.wait(reply.delay_s):
            return  # server is stopping: drop the connection
        if reply.hang:
            self.server.owner._stopping.wait()
            return
        if reply.close_without_answer:
            self.close_connection = True
            return
        if reply.echo_authorization:
            quoted = headers.get("authorization", "(none)")
            message = f"Incorrect API key provided: {quoted}. You can find your API key in your account."
            error = {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}
            self._json(reply.status if reply.status != 200 else 401, {"error": error})
        elif reply.garbage_body is not None:
            self._raw(200, reply.garbage_body)
        elif not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no such endpoint {self.path}"}})
        elif reply.status != 200 and reply.raw_error_body is not None:
            self._raw(reply.status, reply.raw_error_body)
        elif reply.status != 200:
            self._json(reply.status, dict(reply.error_body or {"error": {"message": f"HTTP {reply.status}"}}))
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._complete(body, reply)

    def _json(self, status: int, obj: Mapping[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _raw(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _complete(self, body: Mapping[str, Any], reply: Reply) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.thinking:
            message["reasoning_content"] = reply.thinking
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{i}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        choice = {"index": 0, "message": message, "finish_reason": reply.effective_finish_reason}
        self._json(200, {**_envelope(body, "chat.completion"), "choices": [choice], "usage": _usage(reply, body)})

    def _stream(self, body: Mapping[str, Any], reply: Reply) -> None:
        self._chunked = reply.chunked
        if reply.chunked:
            self.protocol_version = "HTTP/1.1"  # chunked framing needs an HTTP/1.1 status line
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if reply.chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
        self.end_headers()
        if reply.raw_events is not None:
            for i, event in enumerate(reply.raw_events):
                if i and reply.chunk_delay_s and self.server.owner._stopping.wait(reply.chunk_delay_s):
                    return
                self._out(f"data: {event}\n\n".encode())
                self.wfile.flush()
            if reply.raw_done:
                self._out(b"data: [DONE]\n\n")
            self._end_chunks()
            return
        base = _envelope(body, "chat.completion.chunk")
        for i, delta in enumerate(_deltas(reply)):
            if i and reply.chunk_delay_s and self.server.owner._stopping.wait(reply.chunk_delay_s):
                return
            self._event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        if reply.endless:
            self._stream_forever(base, reply)
            return
        if reply.drip_s:
            # Alive but never done: SSE comments keep the socket busy, so only a client-side idle timer
            # that ignores them can notice the reply is stuck.
            while not self.server.owner._stopping.wait(reply.drip_s):
                self._out(b": keep-alive\n\n")
                self.wfile.flush()
            return
        self._event(
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.effective_finish_reason}]}
        )
        if reply.send_usage and (body.get("stream_options") or {}).get("include_usage"):
            self._event({**base, "choices": [], "usage": _usage(reply, body)})
        self._out(b"data: [DONE]\n\n")
        self.wfile.flush()
        self._end_chunks()

    def _stream_forever(self, base: Mapping[str, Any], reply: Reply) -> None:
        owner = self.server.owner
        try:
            if reply.endless_line:
                self._out(b'data: {"choices": [{"index": 0, "delta": {"content": "')
                while not owner._stopping.is_set():
                    self._out(reply.endless.encode())
                    self.wfile.flush()
                return
            for number in itertools.count():
                if owner._stopping.is_set():
                    return
                # Numbered, so that no two chunks are alike (litellm stops a stream that repeats one chunk).
                choice = {"index": 0, "delta": {"content": f"{reply.endless}{number}\n"}, "finish_reason": None}
                self._out(f"data: {json.dumps({**base, 'choices': [choice]})}\n\n".encode())
                self.wfile.flush()
                if reply.chunk_delay_s and owner._stopping.wait(reply.chunk_delay_s):
                    return
        except OSError:  # the client hung up: what a capped reply must do
            owner.hung_up.set()

    def _event(self, obj: Mapping[str, Any]) -> None:
        self._out(f"data: {json.dumps(obj)}\n\n".encode())
        self.wfile.flush()


    def _out(self, data: bytes) -> None:
        if getattr(self, "_chunked", False):
            # Split in two chunks, so a client must join chunk bodies that cut an event in half.
            half = max(1, len(data) // 2)
            for piece in (data[:half], data[half:]):
                if piece:
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        else:
            self.wfile.write(data)

    def _end_chunks(self) -> None:
        if getattr(self, "_chunked", False):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()


def _envelope(body: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
        "object": kind,
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
    }


def counted_prompt_tokens(body: Mapping[str, Any]) -> int:
    """A tokenizer stand-in: everything the model reads (system prompt and messages as JSON, the tool
    definitions), a token per four characters."""
    read = json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("tools", []),
                                                                                   ensure_ascii=False)
    return len(read) // 4


MAX_TOOL_CALL_ID = 40  # OpenAI's limit on ``tool_calls[].id`` in chat completions


def tool_id_refusal(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 body for a tool call id over 40 characters (its wording, seen in public reports), or None."""
    for i, message in enumerate(body.get("messages") or []):
        for j, call in enumerate(message.get("tool_calls") or [] if isinstance(message, dict) else []):
            call_id = call.get("id") if isinstance(call, dict) else None
            if isinstance(call_id, str) and len(call_id) > MAX_TOOL_CALL_ID:
                param = f"messages[{i}].tool_calls[{j}].id"
                message_text = (f"Invalid '{param}': string too long. Expected a string with maximum length "
                                f"{MAX_TOOL_CALL_ID}, but got a string with length {len(call_id)} instead.")
                return {"error": {"message": message_text, "type": "invalid_request_error", "param": param,
                                  "code": "string_above_max_length"}}
    return None


def _usage(reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
    prompt = counted_prompt_tokens(body) if reply.count_tokens else reply.prompt_tokens
    completion = reply.completion_tokens
    if reply.count_tokens:
        calls = [{"name": call.name, "arguments": dict(call.arguments)} for call in reply.tool_calls]
        completion = (len(reply.thinking) + len(reply.text) + len(json.dumps(calls) if calls else "")) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
    }


def _pieces(text: str, parts: int = 3) -> list[str]:
    """Split text into up to ``parts`` non-empty pieces so clients must concatenate deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _deltas(reply: Reply) -> Iterator[dict[str, Any]]:
    yield {"role": "assistant", "content": ""}
    for piece in _pieces(reply.thinking):
        yield {"reasoning_content": piece}
    for piece in _pieces(reply.text):
        yield {"content": piece}
    for index, call in enumerate(reply.tool_calls):
        # Like OpenAI: only the first delta of a call carries its id and name.
        head = {"index": index, "id": call.id or f"call_{index}", "type": "function"}
        yield {"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}
        for piece in _pieces(json.dumps(dict(call.arguments))):
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: ScriptedServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up early (cancel tests) cause harmless broken pipes


class ScriptedServer:
    """Replays queued replies to OpenAI chat requests and records each request body."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[Reply] = []
        # Optional: a reply chosen by the request body (e.g. every summarizer request gets a summary),
        # None to take the queue's next one. Keeps interleavings deterministic when the order varies.
        self.route: Callable[[dict[str, Any]], Reply | None] | None = None
        # Rules of a particular server (``fakes.chat_checks``): each returns (status, error body) to refuse a
        # request, None to accept it; a refused request is recorded and keeps the queued reply.
        self.checks: list[Callable[[dict[str, Any], dict[str, str]], tuple[int, dict[str, Any]] | None]] = []
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._stopping = threading.Event()
        self.hung_up = threading.Event()  # a client hung up on an ``endless`` reply
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ScriptedServer:
        self._httpd = _Server(self)
        # A short poll interval keeps stop() fast (shutdown waits for the serve loop to notice).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What to pass as ``api_base`` (it includes ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of each request (names lower-cased), oldest first."""
        with self._lock:
            return list(self._headers)

    @property
    def pending(self) -> int:
        """How many queued replies have not been used yet."""
        with self._lock:
            return len(self._queue)

    def _record_only(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)

    def _record_and_next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)
            routed = self.route(body) if self.route is not None else None
            if routed is not None:
                return routed
            if not self._queue:
                return Reply(text=NO_SCRIPTED_REPLY)
            return self._queue[0] if self._queue[0].repeat else self._queue.pop(0)
