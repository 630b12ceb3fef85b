"""Signatures the fake providers issue and later verify: Anthropic thinking signatures, redacted-thinking
data, and Gemini thought signatures bound to one function call.

Each is an HMAC under the server's secret, so a client cannot forge one, and any change to the signed
content or to the signature itself is detected. The default secret is fixed, so a session recorded
against one server instance still verifies against another (as real signatures outlive connections).
Gemini signatures are made long (296 characters, like real ones) and always contain ``+``, ``/`` and
``=``, so an id sanitiser that rewrites or truncates them is caught.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import itertools
import threading
from collections.abc import Mapping
from typing import Any

from .http_fake import canonical_json

DEFAULT_SECRET = b"pi-compact fake provider secret"
_MAC_SIZE = 32
# 0xfb 0xff encodes as "+/" and an odd total length forces "==" padding: every signature has all three.
_GEMINI_PREFIX = b"\xfb\xff"
_GEMINI_SIZE = 220  # bytes -> 296 base64 characters


class Signer:
    def __init__(self, secret: bytes = DEFAULT_SECRET) -> None:
        self._secret = secret
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def _mac(self, label: bytes, payload: bytes) -> bytes:
        return hmac.new(self._secret, label + b"\0" + payload, hashlib.sha256).digest()

    # Anthropic -------------------------------------------------------------------------------------

    def thinking_signature(self, thinking: str) -> str:
        raw = self._mac(b"thinking", thinking.encode()) + self._mac(b"thinking-2", thinking.encode())
        return base64.b64encode(b"\x12" + raw).decode()

    def verify_thinking(self, thinking: str, signature: object) -> bool:
        return isinstance(signature, str) and hmac.compare_digest(signature, self.thinking_signature(thinking))

    def redacted_data(self, payload: str) -> str:
        """Opaque data carrying its own MAC, as the API's encrypted redacted thinking does."""
        body = payload.encode()
        return base64.b64encode(self._mac(b"redacted", body) + body).decode()

    def verify_redacted(self, data: object) -> bool:
        if not isinstance(data, str):
            return False
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return False
        mac, body = raw[:_MAC_SIZE], raw[_MAC_SIZE:]
        return len(raw) > _MAC_SIZE and hmac.compare_digest(mac, self._mac(b"redacted", body))

    # Gemini ----------------------------------------------------------------------------------------

    def call_signature(self, call: Mapping[str, Any]) -> str:
        """A fresh signature for one ``functionCall`` (its name and args); a serial number makes two
        signatures for equal calls differ, as real ones do."""
        with self._lock:
            serial = next(self._counter).to_bytes(4, "big")
        return base64.b64encode(self._gemini_bytes(serial, call)).decode()

    def verify_call(self, call: Mapping[str, Any], signature: object) -> bool:
        if not isinstance(signature, str):
            return False
        try:
            raw = base64.b64decode(signature, validate=True)
        except (binascii.Error, ValueError):
            return False
        if len(raw) != _GEMINI_SIZE or not raw.startswith(_GEMINI_PREFIX):
            return False
        serial = raw[len(_GEMINI_PREFIX) : len(_GEMINI_PREFIX) + 4]
        return hmac.compare_digest(raw, self._gemini_bytes(serial, call))

    def _gemini_bytes(self, serial: bytes, call: Mapping[str, Any]) -> bytes:
        payload = serial + canonical_json({"name": call.get("name"), "args": call.get("args") or {}}).encode()
        stream = b"".join(self._mac(b"gemini-%d" % i, payload) for i in range(7))
        body = _GEMINI_PREFIX + serial + stream
        return body[:_GEMINI_SIZE]
