"""The terminal tests' shared pieces: a scripted server and one CLI in tmux, each kept for a whole module
(a module's tests run in file order as one conversation); a module may ask for a fresh server per test
instead by defining its own ``server``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_server import ScriptedServer
from terminal_harness import CLI, LONG, Terminal


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer().start()
    yield scripted
    scripted.stop()


@pytest.fixture(scope="module")
def terminal(tmp_path_factory: pytest.TempPathFactory, server: ScriptedServer) -> Iterator[Terminal]:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    term = Terminal(tmp_path_factory.mktemp("tty"), server)
    try:
        term.wait_for("pi>", timeout=LONG)
        yield term
    finally:
        term.close()
