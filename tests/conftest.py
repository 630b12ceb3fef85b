"""Shared fixtures: the scripted OpenAI-compatible server, and litellm kept offline and quiet.

The environment variables are set here, before any test imports litellm, so the import never tries
to download the model cost map (it would print warnings and could stall without a network).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from model_paths import PATHS  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402 - after the environment is set
from ui_harness import project  # noqa: E402, F401 - the UI tests' project directory, a fixture for every folder


def pytest_configure(config: pytest.Config) -> None:
    # litellm 1.110 trips pydantic deprecation and TypedDict warnings on every streamed call; they say
    # nothing about our code and would bury real warnings. (The CLI silences them in litellm_model.)
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:litellm")
    config.addinivalue_line("filterwarnings", "ignore:.*is using the `ReadOnly` qualifier:UserWarning")
    config.addinivalue_line("filterwarnings", "ignore:.*are using the `ReadOnly` qualifier:UserWarning")
    config.addinivalue_line("markers", "litellm_only: a model test that only makes sense on the litellm path")


@pytest.fixture(params=PATHS)
def model_path(request: pytest.FixtureRequest) -> str:
    """Each model adapter in turn ("litellm", "direct"); tests marked ``litellm_only`` skip "direct"."""
    path: str = request.param
    if path == "direct" and request.node.get_closest_marker("litellm_only"):
        pytest.skip("about the litellm path only")
    return path


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A fresh scripted server per test (empty queue, no recorded requests), stopped afterwards."""
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _every_compaction_start_has_one_end() -> Iterator[None]:
    """Every agent session a test built pairs each compaction_start with exactly one compaction_end."""
    yield
    harness = sys.modules.get("agent_harness")  # only tests that built agent sessions imported it
    if harness is not None:
        harness.check_created_harnesses()


@pytest.fixture(autouse=True)
def _private_learned_windows(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test learns windows into its own book, never the user's cache (subprocesses inherit it)."""
    monkeypatch.setenv("PI_COMPACT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
