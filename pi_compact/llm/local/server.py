"""The embedded model's runtime: llama.cpp's own HTTP server, inside this process, on loopback.

``shared_server(spec)`` returns the process's one ``LocalServer`` (one model in memory at a time),
starting it in a daemon thread; ``wait`` gives its OpenAI-compatible base URL. The only module that
imports ``xllamacpp`` (lazily).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import secrets
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_compact.cancel import CancelToken
from pi_compact.errors import LocalModelError
from pi_compact.llm.local.prefix import PrefixCache
from pi_compact.llm.local.template import CHAT_TEMPLATE
from pi_compact.llm.local.weights import INSTALL_HINT, check_gguf, prepare_bundled
from pi_compact.paths import cache_dir

LOCAL_WINDOW = 16384
MAX_OUTPUT_TOKENS = 1024
ALIAS = "local"
REPEAT_PENALTY = 1.1
# The server reports prompt progress once per batch: its default 2,048 gave one report per ~35 s of
# reading on 2 cores; 512 is the micro-batch it computes in anyway, so reading costs the same.
PROMPT_BATCH = 512
RUNTIME_MISSING = f"The local model's runtime (xllamacpp) is not installed: run {INSTALL_HINT}, or pass --model."


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class ServerSpec:
    """What to run: a model file (None: the bundled model), the context window and the thread count."""

    model_file: Path | None = None
    window: int = LOCAL_WINDOW
    threads: int = field(default_factory=default_threads)


def prefix_directory() -> Path:
    """Where saved prompt prefixes live: ``prompts/`` in the user cache directory."""
    return cache_dir() / "prompts"


def runtime_installed() -> bool:
    """Is the runtime importable? (Checked without importing it.)"""
    return importlib.util.find_spec("xllamacpp") is not None


def _import_runtime() -> Any:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before the import: OpenMP reads it once
    try:
        import xllamacpp
    except ImportError:
        raise LocalModelError(RUNTIME_MISSING) from None
    return xllamacpp


# Runtime settings (measured on a 2-core machine, see benchmarks/README.md): one slot, the context
# window from ``spec`` (16,384 by default), ``min(4, cpus)`` threads, greedy sampling with a repeat
# penalty (a 1.5B model loops otherwise), replies capped at ``MAX_OUTPUT_TOKENS`` unless a request asks
# for fewer, prompts read in batches of ``PROMPT_BATCH`` (a progress report after each), verbosity 0
# (more writes ~20 lines onto the terminal). ``OMP_WAIT_POLICY=PASSIVE`` is set before the import:
# busy-waiting OpenMP threads slowed generation from ~20 to 1-4 tokens/s on a loaded machine.
# ``model_alias`` must be a list, or replies name the model "a". Warm-up stays on: without it the
# runtime hung when the server was dropped. Slot saving is on, into ``prefix_directory()``
# (``prefix``: prompt prefixes kept between runs); the runtime joins that path and a file name
# without a separator, so it ends with one.
def _params(runtime: Any, model_file: Path, spec: ServerSpec, api_key: str, slots: Path | None = None) -> Any:
    params = runtime.CommonParams()
    params.model.path = str(model_file)
    params.model_alias = [ALIAS]
    params.chat_template = CHAT_TEMPLATE
    params.n_ctx = spec.window
    params.n_parallel = 1
    params.n_predict = MAX_OUTPUT_TOKENS
    params.n_batch = PROMPT_BATCH
    params.cpuparams.n_threads = spec.threads
    params.cpuparams_batch.n_threads = spec.threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port
    params.api_keys = [api_key]
    params.verbosity = 0
    params.ui = False
    params.sampling.temp = 0.0
    params.sampling.penalty_repeat = REPEAT_PENALTY
    if slots is not None:
        params.slot_save_path = str(slots) + os.sep
        params.endpoint_slots = True
    return params


def _identity(runtime: Any, model_file: Path, spec: ServerSpec) -> str:
    """What a saved prefix is only valid for: this runtime, this exact model file, window and template."""
    stat = model_file.stat()
    template = hashlib.sha256(CHAT_TEMPLATE.encode("utf-8")).hexdigest()
    version = getattr(runtime, "__version__", "?")
    return f"{version}|{model_file}|{stat.st_size}|{stat.st_mtime_ns}|{spec.window}|{template}"


def _slot_directory() -> Path | None:
    try:
        directory = prefix_directory()
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # no cache directory: every run reads its prompts from scratch
    return directory


class LocalServer:
    """One running (or starting) in-process server.

    Starting joins and checks the bundled weights when needed (``weights``), imports the runtime, then
    builds its ``Server``, which loads the model and listens on 127.0.0.1 at a free port. ``progress``
    says what it is doing; ``wait(cancel)`` returns the base URL (``.../v1``), None when cancelled, or
    raises what the start raised (``LocalModelError``: one sentence for the user). Each server has a
    random ``api_key``, so other local users cannot use it. It lives as long as the process: its
    threads are native and end with it, and there is no child process; ``stop()`` drops it earlier.
    """

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.api_key = secrets.token_urlsafe(24)
        self.started_in: float | None = None  # seconds from start to listening
        self._progress = "Starting the local model…"
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._server: Any = None
        self._base: str | None = None
        self._error: BaseException | None = None
        self._stopped = False
        # Set once listening, when the cache directory is usable (``prefix``).
        self.prefixes: PrefixCache | None = None
        self.identity = ""
        self._thread = threading.Thread(target=self._start, name="pi-compact-local-model", daemon=True)
        self._thread.start()

    @property
    def progress(self) -> str:
        return self._progress

    @property
    def ready(self) -> bool:
        """True once started or failed: waiting would not block."""
        return self._done.is_set()

    @property
    def failed(self) -> bool:
        return self._done.is_set() and self._error is not None

    def _joining(self, done: int, total: int) -> None:
        percent = done * 100 // max(1, total)
        self._progress = f"Preparing the local model (first use): {percent}% of {total / 1e9:.1f} GB…"

    def _start(self) -> None:
        began = time.monotonic()
        try:
            model_file = check_gguf(self.spec.model_file) if self.spec.model_file else prepare_bundled(self._joining)
            self._progress = "Loading the local model…"
            runtime = _import_runtime()
            slots = _slot_directory()
            try:
                server = runtime.Server(_params(runtime, model_file, self.spec, self.api_key, slots))
            except Exception as error:  # noqa: BLE001 - the runtime's own error types are not documented
                raise LocalModelError(
                    f"The local model {model_file} could not be loaded ({error}): "
                    "check the file, or set localModelPath to another GGUF model."
                ) from None
            with self._lock:
                if self._stopped:
                    return  # stopped while loading: dropping ``server`` here shuts it down
                self._server = server
                self._base = str(server.listening_address).rstrip("/") + "/v1"
            if slots is not None:
                self.identity = _identity(runtime, model_file, self.spec)
                self.prefixes = PrefixCache(slots, self._slot_action)
            self.started_in = time.monotonic() - began
            self._progress = "Local model ready."
        except BaseException as error:  # noqa: BLE001 - handed to whoever waits
            self._error = error
            self._progress = "The local model failed to start."
        finally:
            self._done.set()

    def wait(self, cancel: CancelToken | None = None) -> str | None:
        """The base URL once listening; None if ``cancel`` fires first; raises the start's error."""
        while not self._done.wait(0.05):
            if cancel is not None and cancel.cancelled:
                return None
        if self._error is not None:
            raise self._error
        assert self._base is not None
        return self._base

    def _slot_action(self, action: str, filename: str) -> Any:
        """Save or restore the one slot (``/slots/0``); raises on any failure."""
        assert self._base is not None
        request = urllib.request.Request(
            self._base.removesuffix("/v1") + f"/slots/0?action={action}", json.dumps({"filename": filename}).encode(),
            {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def stop(self) -> None:
        """Shut the server down (or, while it loads, as soon as it has loaded)."""
        with self._lock:
            self._stopped = True
            server, self._server = self._server, None
        del server  # the runtime stops its threads when its last reference goes


_lock = threading.Lock()
_current: LocalServer | None = None


def shared_server(spec: ServerSpec) -> LocalServer:
    """The process's server for ``spec`` (see the module contract)."""
    global _current
    with _lock:
        if _current is not None and _current.spec == spec and not _current.failed:
            return _current
        if _current is not None:
            _current.stop()
        _current = LocalServer(spec)
        return _current


def stop_shared() -> None:
    """Stop the process's server, if any (tests; the CLI simply exits)."""
    global _current
    with _lock:
        if _current is not None:
            _current.stop()
        _current = None


def running() -> bool:
    """Is a server running or starting in this process?"""
    return _current is not None and not _current.failed


__all__ = ["ALIAS", "LOCAL_WINDOW", "MAX_OUTPUT_TOKENS", "LocalServer", "ServerSpec", "runtime_installed",
           "shared_server", "stop_shared"]
