"""``local``: the embedded model, for a machine with no API key or no network.

Contract:
- ``--model local`` names it; with no model configured and no provider key in the environment (no
  non-empty ``*_API_KEY`` variable) it is the default (``choose_by_default``).
- ``local_info`` describes it without starting anything: window = the ``--context-window`` flag >
  ``models.local.contextWindow`` > 16,384; replies and summaries capped at 1,024 tokens (a 1.5B model
  that loops runs to its cap, and summaries are better short).
- ``LocalChatModel`` is the direct OpenAI-compatible client (``openai_compat``) pointed at the
  in-process server (``local_server``); creating it starts the server in the background, and its
  ``stream`` waits for it (cancellably) before the request goes out as for any other such server.
  ``ready``/``progress``/``wait_ready`` let a terminal show what the start is doing.
- Each request's prompt prefix (its tools, else its system prompt) is restored from disk before it
  goes out when the slot holds another one, and saved after a good reply when new (``local_prefix``).
- Creating it fails at once, with one sentence naming the install command, when the runtime or the
  bundled model's chunks are not installed (``localModelPath`` replaces the bundled model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from pi_compact.cancel import CancelToken
from pi_compact.errors import LocalModelError
from pi_compact.llm.local.prefix import PrefixCache, prefix_key
from pi_compact.llm.local.server import (
    LOCAL_WINDOW,
    MAX_OUTPUT_TOKENS,
    RUNTIME_MISSING,
    ServerSpec,
    runtime_installed,
    shared_server,
)
from pi_compact.llm.local.weights import BUNDLED, bundled_ready, chunk_paths
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.protocol import ChatRequest, Done, ModelInfo, StreamEvent, aborted_message
from pi_compact.paths import expand_tilde
from pi_compact.settings import RetrySettings

LOCAL_MODEL = "local"
DEFAULT_NOTICE = (
    f"No model configured and no provider API key in the environment: using the embedded local model "
    f"({BUNDLED.name}, runs on this machine; good for trying pi-compact and for summaries, not for real "
    "coding work). Pass --model to use another."
)


def choose_by_default(environ: Mapping[str, str]) -> bool:
    """Should a run with no model configured use ``local``? Yes unless a provider key is set."""
    return not any(name.endswith("_API_KEY") and value.strip() for name, value in environ.items())


def local_info(window: int | None = None, source: str = "local runtime") -> ModelInfo:
    """What the agent knows about ``local`` (``window``: the flag's or the settings' window, if any)."""
    return ModelInfo(model=LOCAL_MODEL, provider=LOCAL_MODEL, context_window=window or LOCAL_WINDOW,
                     max_output_tokens=MAX_OUTPUT_TOKENS, window_source=source if window else "local runtime")


def model_file(setting: str | None, cwd: Path | None = None) -> Path | None:
    """The ``localModelPath`` file (tilde-expanded, relative to ``cwd``), or None for the bundled model."""
    if not setting:
        return None
    path = expand_tilde(setting)
    return path if path.is_absolute() or cwd is None else cwd / path


class LocalChatModel(OpenAICompatModel):
    """The direct client for the in-process server (see the module contract)."""

    def __init__(self, info: ModelInfo, *, file: Path | None = None, retry: RetrySettings | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        if not runtime_installed():
            raise LocalModelError(RUNTIME_MISSING)
        if file is None and not bundled_ready():
            chunk_paths()  # raises, naming the install command, when the chunks are missing
        self._server = shared_server(ServerSpec(file, info.context_window))
        self._report = report
        # The real base is known once the server listens (``stream`` sets it); the key is the server's.
        super().__init__(info, api_base="http://127.0.0.1", api_key=self._server.api_key, retry=retry)

    @property
    def ready(self) -> bool:
        return self._server.ready

    @property
    def progress(self) -> str | None:
        """What the start is doing, while it runs."""
        return None if self._server.ready else self._server.progress

    def wait_ready(self, cancel: CancelToken | None = None) -> bool:
        """Wait until the server listens; False when cancelled first (raises the start's error)."""
        return self._server.wait(cancel) is not None

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        if not self._server.ready and self._report is not None:
            self._report(f"Waiting for the embedded local model: {self._server.progress}")
        base = self._server.wait(cancel)
        if base is None:
            return iter([Done(aborted_message(self.info))])
        self._api_base = base
        prefixes = self._server.prefixes
        if prefixes is None:
            return super().stream(request, cancel)
        key = prefix_key(self._server.identity, request)
        prefixes.before(key)
        return _saving_prefix(super().stream(request, cancel), prefixes, key)


def _saving_prefix(events: Iterator[StreamEvent], prefixes: PrefixCache, key: str) -> Iterator[StreamEvent]:
    """``events``, saving the slot as ``key``'s prefix after a good reply (``PrefixCache.after``)."""
    for event in events:
        if isinstance(event, Done) and event.message.get("stopReason") in ("stop", "toolUse", "length"):
            usage = event.message.get("usage") or {}
            held = sum(int(usage.get(part) or 0) for part in ("input", "cacheRead", "output"))
            prefixes.after(key, held)  # before Done: the caller may stop reading there
        yield event


__all__ = ["DEFAULT_NOTICE", "LOCAL_MODEL", "LocalChatModel", "choose_by_default", "local_info", "model_file"]
