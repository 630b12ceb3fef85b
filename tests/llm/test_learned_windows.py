"""Learned windows: a provider's overflow error that states its limit is remembered per model and used.

Precedence: --context-window > settings > learned > litellm's model data. The book lives in the user
cache directory (``PI_COMPACT_CACHE_DIR`` here, set per test by conftest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scripted_server import Reply, ScriptedServer, error_reply

from pi_compact.llm.learned import LearningModel, book_path, learned_window, remember_window
from pi_compact.llm.protocol import ChatRequest, ModelInfo, complete
from pi_compact.llm.resolve import resolve_model
from pi_compact.llm.scripted import ScriptedModel, ScriptedReply
from pi_compact.settings import ModelOverride, Settings

MODEL = "openai/gpt-4o"  # in litellm's bundled data with a 128 000-token window
OVERFLOW_8192 = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
REQUEST = ChatRequest(system="s", messages=[{"role": "user", "content": "hi", "timestamp": 0}])


def _learning(source: str = "litellm") -> tuple[LearningModel, list[str]]:
    told: list[str] = []
    inner = ScriptedModel(ModelInfo(MODEL, "openai", 128_000, None, window_source=source),
                          ScriptedReply(error=OVERFLOW_8192), ScriptedReply(text="ok"))
    return LearningModel(inner, told.append), told


def test_overflow_error_stating_the_limit_is_learned_and_used_at_once() -> None:
    model, told = _learning()
    complete(model, REQUEST)
    assert (model.info.context_window, model.info.window_source) == (8192, "learned")
    assert learned_window(MODEL) == 8192
    assert json.loads(book_path().read_text()) == {MODEL: 8192}
    complete(model, REQUEST)
    assert len(told) == 1 and "8,192-token context window" in told[0]


def test_a_window_the_user_set_stays_in_force_but_is_recorded() -> None:
    model, told = _learning("settings")
    complete(model, REQUEST)
    assert model.info.context_window == 128_000
    assert learned_window(MODEL) == 8192
    assert "stay in force" in told[0]


def test_error_without_a_number_teaches_nothing() -> None:
    inner = ScriptedModel(ModelInfo(MODEL, "openai", 128_000, None), ScriptedReply(error="prompt is too long"))
    model = LearningModel(inner)
    complete(model, REQUEST)
    assert model.info.context_window == 128_000 and learned_window(MODEL) is None


def test_window_precedence_flag_then_settings_then_learned_then_litellm() -> None:
    assert resolve_model(MODEL, settings=Settings()).window_source == "litellm"
    remember_window(MODEL, 8192)
    learned = resolve_model(MODEL, settings=Settings())
    assert (learned.context_window, learned.window_source) == (8192, "learned")
    with_setting = Settings(models=((MODEL, ModelOverride(context_window=50_000)),))
    assert resolve_model(MODEL, settings=with_setting).context_window == 50_000
    flagged = resolve_model(MODEL, context_window=60_000, settings=with_setting)
    assert (flagged.context_window, flagged.window_source) == (60_000, "flag")


def test_unreadable_book_is_empty() -> None:
    book_path().parent.mkdir(parents=True, exist_ok=True)
    book_path().write_text("{not json")
    assert learned_window(MODEL) is None
    assert remember_window(MODEL, 4096) and learned_window(MODEL) == 4096


def _run(server: ScriptedServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    agent_dir, cwd = tmp_path / "agent", tmp_path / "proj"
    agent_dir.mkdir(exist_ok=True)
    cwd.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_"))}
    env.update({"PI_CODING_AGENT_DIR": str(agent_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    command = [sys.executable, "-m", "pi_compact", "--model", MODEL, "--api-base", server.base_url,
               "--api-key", "test", "--no-session", "-p", "hello"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_acceptance_a_stated_limit_once_is_used_by_the_next_session(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.enqueue(error_reply(400, OVERFLOW_8192, code="context_length_exceeded"))
    first = _run(scripted_server, tmp_path)
    assert "Learned from the provider: openai/gpt-4o has a 8,192-token context window" in first.stderr
    scripted_server.enqueue(Reply(text="fine"))
    second = _run(scripted_server, tmp_path)
    assert (second.returncode, second.stdout) == (0, "fine\n")
    assert "Using the 8,192-token context window" in second.stderr
    assert resolve_model(MODEL, settings=Settings()).context_window == 8192
