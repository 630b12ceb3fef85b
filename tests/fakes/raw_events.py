"""A hostile provider on 127.0.0.1: each request is answered with a scripted ``RawAnswer``, whatever the path
(``/v1/chat/completions`` or ``/v1/responses``), so a test can send what no honest server sends: events built
to fill memory, calls that cannot be paired, error bodies full of terminal escapes.

    server = RawEventServer().start()
    server.enqueue(RawAnswer(events=[{"type": "response.created", ...}, ...]))
    server.enqueue(RawAnswer(events=endless_generator(), ...))   # streamed until the client hangs up
    server.enqueue(RawAnswer(status=400, body="...")))           # an error answer, sent verbatim

Every request body is recorded (``requests``); ``hung_up`` is set when a client dropped a stream.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .http_fake import Exchange, ScriptedFake


@dataclass(frozen=True)
class RawAnswer:
    """``events`` (dicts sent as ``data:`` JSON with an ``event:`` line naming their ``type``, or ready-made
    strings sent as they are) streamed with status 200; or, with ``status`` != 200, ``body`` verbatim."""

    events: Iterable[Mapping[str, Any] | str] = ()
    status: int = 200
    body: str = ""
    content_type: str = "application/json"
    repeat: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)


class RawEventServer(ScriptedFake[RawAnswer, dict[str, Any]]):
    thread_name = "fake-raw-events"

    def __init__(self) -> None:
        super().__init__()
        self.hung_up = threading.Event()

    def start(self) -> RawEventServer:
        super().start()
        return self

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.records

    def fallback(self) -> RawAnswer:
        return RawAnswer(status=500, body='{"error": {"message": "nothing scripted"}}')

    def handle(self, exchange: Exchange) -> None:
        body = exchange.json_body()
        self._keep(body)
        answer = self._next_reply(body)
        handler = exchange._handler
        if answer.status != 200:
            data = answer.body.encode("utf-8", "surrogatepass")
            handler.send_response(answer.status)
            handler.send_header("Content-Type", answer.content_type)
            handler.send_header("Content-Length", str(len(data)))
            for name, value in answer.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
            return
        exchange.start_events(answer.headers)
        try:
            for event in answer.events:
                if isinstance(event, str):
                    handler.wfile.write(event.encode())
                else:
                    kind = event.get("type")
                    head = f"event: {kind}\n" if isinstance(kind, str) else ""
                    handler.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
            handler.wfile.write(b"data: [DONE]\n\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.hung_up.set()
