"""A minimal stdlib client for talking to the fakes directly (raw wire tests, no litellm in between)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ANTHROPIC_HEADERS = {"x-api-key": "sk-fake", "anthropic-version": "2023-06-01"}


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)

    def events(self) -> list[tuple[str | None, Any]]:
        """The SSE stream as (event name or None, parsed data) pairs."""
        out: list[tuple[str | None, Any]] = []
        for raw in self.text.replace("\r\n", "\n").split("\n\n"):
            name: str | None = None
            data: list[str] = []
            for line in raw.split("\n"):
                if line.startswith("event:"):
                    name = line[len("event:") :].strip()
                elif line.startswith("data:"):
                    data.append(line[len("data:") :].strip())
            if data:
                out.append((name, json.loads("\n".join(data))))
        return out


def post(url: str, body: Mapping[str, Any] | bytes, headers: Mapping[str, str] | None = None) -> Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return Response(answer.status, dict(answer.headers.items()), answer.read().decode())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers.items()), error.read().decode())
