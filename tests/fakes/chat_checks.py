"""Rules of particular OpenAI-compatible servers, for the scripted server (``ScriptedServer.checks``): each refuses
what such a server refuses, with an error worded as those servers word it, so a request a test sees accepted would
have been accepted there. pi's ``compat`` flags exist for exactly these servers:

- ``no_stream_options``: a server that does not know ``stream_options`` (``supportsUsageInStreaming: false``);
- ``tool_result_names``: one that needs ``name`` on every tool message (``requiresToolResultName``);
- ``assistant_after_tool``: one that refuses a user message right after tool results
  (``requiresAssistantAfterToolResult``);
- ``needs_header``: a gateway that authenticates by a header of its own (``headers``);
- ``known_fields``: one that refuses body fields it does not know (a server without ``store`` or ``strict``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

Check = Callable[[dict[str, Any], dict[str, str]], "tuple[int, dict[str, Any]] | None"]


def _error(status: int, message: str, code: str | None = None) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


def no_stream_options(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
    if "stream_options" in body:
        return _error(400, "Unrecognized request argument supplied: stream_options")
    return None


def tool_result_names(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
    for index, message in enumerate(body.get("messages") or []):
        if message.get("role") == "tool" and not message.get("name"):
            return _error(400, f"messages[{index}]: a tool message must have a name")
    return None


def assistant_after_tool(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
    messages = body.get("messages") or []
    for index in range(1, len(messages)):
        if messages[index].get("role") == "user" and messages[index - 1].get("role") == "tool":
            return _error(400, "Unexpected role 'user' after role 'tool'")
    return None


def needs_header(name: str, value: str) -> Check:
    """A gateway that refuses every request without ``name: value``."""
    def check(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        if headers.get(name.lower()) != value:
            return _error(401, f"Missing or invalid {name} header.", "invalid_api_key")
        return None

    return check


def known_fields(fields: Collection[str]) -> Check:
    """A server that refuses top-level body fields other than ``fields``."""
    def check(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        unknown = sorted(set(body) - set(fields))
        if unknown:
            return _error(400, f"Unrecognized request argument supplied: {unknown[0]}")
        return None

    return check


__all__ = ["Check", "assistant_after_tool", "known_fields", "needs_header", "no_stream_options",
           "tool_result_names"]
