"""The embedded model's server replaced by the scripted server, for tests of what the local model does
with a listening server (its prompt-reading reports, its timeouts)."""

from __future__ import annotations

from pi_compact.cancel import CancelToken


class Listening:
    """A stand-in for a started server at the scripted server's address (no saved prefixes)."""

    api_key = "k"
    ready = True
    prefixes = None

    def __init__(self, base: str) -> None:
        self.base = base

    def wait(self, cancel: CancelToken | None = None) -> str:
        return self.base
