"""A stand-in for the embedded model's runtime (``xllamacpp``), for the terminal tests.

Put ``tests/fakes/xllamacpp_stub`` first on ``PYTHONPATH``: ``Server`` then "loads" for
``PI_FAKE_LOCAL_LOAD_S`` seconds and "listens" at ``PI_FAKE_LOCAL_URL`` (a scripted server's root, which
answers as llama.cpp's OpenAI-compatible endpoint would). The parameters are only stored.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any

__version__ = "fake"


class CommonParams:
    """Holds whatever ``llm/local/server.py`` sets."""

    def __init__(self) -> None:
        self.model = SimpleNamespace()
        self.cpuparams = SimpleNamespace()
        self.cpuparams_batch = SimpleNamespace()
        self.sampling = SimpleNamespace()


class Server:
    """Loads (sleeps), then listens where the scripted server does."""

    def __init__(self, params: Any) -> None:
        self.params = params
        time.sleep(float(os.environ.get("PI_FAKE_LOCAL_LOAD_S", "0")))
        self.listening_address = os.environ["PI_FAKE_LOCAL_URL"]
