"""``local``: the embedded model, for a machine with no API key or no network.

``LocalChatModel`` starts the in-process server (``server``) in the background and, once it listens,
sends each request through the client ``connect`` builds for its address (the composition passes the
direct OpenAI-compatible client); ``ready``/``progress``/``wait_ready`` tell how the start goes.
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
from pi_compact.llm.protocol import ChatModel, ChatRequest, Done, ModelInfo, StreamEvent, aborted_message
from pi_compact.paths import expand_tilde

LOCAL_MODEL = "local"
DEFAULT_NOTICE = (
    f"No model configured and no provider API key in the environment: using the embedded local model "
    f"({BUNDLED.name}, runs on this machine; good for trying pi-compact and for summaries, not for real "
    "coding work). Pass --model to use another."
)


# (base URL, API key) of the listening server -> the client that sends its requests.
Connect = Callable[[str, str], ChatModel]


def choose_by_default(environ: Mapping[str, str]) -> bool:
    """Should a run with no model configured use ``local``? Yes unless a provider key is set
    (a non-empty ``*_API_KEY`` variable)."""
    return not any(name.endswith("_API_KEY") and value.strip() for name, value in environ.items())


def local_info(window: int | None = None, source: str = "local runtime") -> ModelInfo:
    """What the agent knows about ``local`` (``window``: the flag's or the settings' window, if any;
    else the runtime's 16,384). Replies and summaries are capped at 1,024 tokens: a 1.5B model that
    loops runs to its cap, and summaries are better short."""
    return ModelInfo(model=LOCAL_MODEL, provider=LOCAL_MODEL, context_window=window or LOCAL_WINDOW,
                     max_output_tokens=MAX_OUTPUT_TOKENS, window_source=source if window else "local runtime")


def model_file(setting: str | None, cwd: Path | None = None) -> Path | None:
    """The ``localModelPath`` file (tilde-expanded, relative to ``cwd``), or None for the bundled model."""
    if not setting:
        return None
    path = expand_tilde(setting)
    return path if path.is_absolute() or cwd is None else cwd / path


class LocalChatModel(ChatModel):
    """The embedded model. Creating it fails at once, in one sentence naming the install command,
    when the runtime or the bundled model's chunks are missing (``file``: a model of the user's own
    instead). Each request's prompt prefix is restored from disk first when the server's slot holds
    another one, and saved after a good reply when new (``prefix``)."""

    def __init__(self, info: ModelInfo, *, connect: Connect, file: Path | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        if not runtime_installed():
            raise LocalModelError(RUNTIME_MISSING)
        if file is None and not bundled_ready():
            chunk_paths()  # raises, naming the install command, when the chunks are missing
        self._info = info
        self._server = shared_server(ServerSpec(file, info.context_window))
        self._connect = connect
        self._client: ChatModel | None = None  # built once the server listens
        self._report = report

    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def ready(self) -> bool:
        return self._server.ready

    @property
    def progress(self) -> str | None:
        """What the start is doing, while it runs; then how far the server has read a prompt, while it reads."""
        if not self._server.ready:
            return self._server.progress
        return self._client.progress if self._client is not None else None

    def wait_ready(self, cancel: CancelToken | None = None) -> bool:
        """Wait until the server listens; False when cancelled first (raises the start's error)."""
        return self._server.wait(cancel) is not None

    @property
    def reading_rate(self) -> float | None:
        return self._client.reading_rate if self._client is not None else None

    @property
    def prefix_by_default(self) -> bool:
        # The server's slot does keep the last prompt (a summary on it read 421 tokens instead of 7,737),
        # but the bundled 1.5B model's summaries asked there kept fewer facts in the eval harness
        # (python-ratekeeper: 2 of 10 against 4 serialized; benchmarks/README.md): "auto" stays
        # serialized for it, "always" still asks on the prefix.
        return False

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        if not self._server.ready and self._report is not None:
            self._report(f"Waiting for the embedded local model: {self._server.progress}")
        base = self._server.wait(cancel)
        if base is None:
            return iter([Done(aborted_message(self.info))])
        if self._client is None:
            self._client = self._connect(base, self._server.api_key)
        prefixes = self._server.prefixes
        if prefixes is None:
            return self._client.stream(request, cancel)
        key = prefix_key(self._server.identity, request)
        prefixes.before(key)
        return _saving_prefix(self._client.stream(request, cancel), prefixes, key)


def _saving_prefix(events: Iterator[StreamEvent], prefixes: PrefixCache, key: str) -> Iterator[StreamEvent]:
    """``events``, saving the slot as ``key``'s prefix after a good reply (``PrefixCache.after``)."""
    for event in events:
        if isinstance(event, Done) and event.message.get("stopReason") in ("stop", "toolUse", "length"):
            usage = event.message.get("usage") or {}
            held = sum(int(usage.get(part) or 0) for part in ("input", "cacheRead", "output"))
            prefixes.after(key, held)  # before Done: the caller may stop reading there
        yield event


__all__ = [
    "DEFAULT_NOTICE", "LOCAL_MODEL", "Connect", "LocalChatModel", "choose_by_default", "local_info", "model_file",
]
