"""The embedded local model in a real terminal (tmux), without the model: a stand-in runtime
(``tests/fakes/xllamacpp_stub``) "loads" it and "listens" where the scripted server does, so the CLI
takes its real path for the embedded model (chosen because nothing else is configured).

Issue 25 §10: the notice that the embedded model is used comes before the prompt, never between a
question and its answer; while the server reads a long prompt, the spinner says how much of it it has
read, from the server's own ``prompt_progress`` reports.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from scripted_server import Reply, ScriptedServer
from terminal_harness import CLI, LONG, Terminal, user_texts

from pi_compact.llm.local.model import DEFAULT_NOTICE

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(not CLI.exists(), reason=f"{CLI} is not installed (pip install -e .)"),
]

STUB = Path(__file__).resolve().parents[1] / "fakes" / "xllamacpp_stub"
QUESTION = "What is six times seven?"
ANSWER = "The answer is 42."


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    """A fresh server for each test here (not the module's)."""
    return scripted_server


def local_terminal(root: Path, server: ScriptedServer, load_s: float = 0.5, width: int = 120) -> Terminal:
    """The CLI with no model configured and no provider key: the embedded model, served by the stand-in."""
    model = root / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(64))
    (root / "agent").mkdir()
    (root / "agent" / "settings.json").write_text(json.dumps({"localModelPath": str(model)}))
    (root / "no-cache").write_text("")  # a file: no saved prompt prefixes (their requests would reach the server)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(STUB), os.environ.get("PYTHONPATH")])),
           "PI_FAKE_LOCAL_URL": f"http://127.0.0.1:{server.port}", "PI_FAKE_LOCAL_LOAD_S": str(load_s),
           "PI_COMPACT_CACHE_DIR": str(root / "no-cache")}
    return Terminal(root, server, model_args="", env=env, width=width)


def test_the_embedded_model_notice_comes_before_the_prompt_not_between_question_and_answer(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.enqueue(Reply(text=ANSWER, delay_s=0.5))
    term = local_terminal(tmp_path, server, load_s=3)
    try:
        term.wait_for("pi>", timeout=LONG)
        term.type(QUESTION)  # at once, as a newcomer does: the model is still loading
        term.wait_for(ANSWER, timeout=LONG)
        screen = term.wait_prompt(since=0, timeout=LONG)
    finally:
        term.close()
    assert user_texts(server) == [QUESTION]
    flat = " ".join(screen.split())  # the notice is one logical line the terminal wraps
    notice = " ".join(DEFAULT_NOTICE.split())
    assert flat.count(notice) == 1
    assert flat.index(notice) < flat.index(f"pi> {QUESTION}") < flat.index(ANSWER)


def test_the_embedded_model_notice_is_wrapped_at_words(server: ScriptedServer, tmp_path: Path) -> None:
    # Issue 35.9: the notice was cut mid-word by the terminal's own wrapping.
    term = local_terminal(tmp_path, server, width=70)
    try:
        term.wait_for("pi>", timeout=LONG)
        rows = term.tmux("capture-pane", "-p", "-S", "-200", "-t", "pi").stdout.splitlines()  # rows as shown
    finally:
        term.close()
    first = next(i for i, row in enumerate(rows) if row.startswith("No model configured"))
    last = next(i for i in range(first, len(rows)) if rows[i].rstrip().endswith("Pass --model to use another."))
    notice = rows[first : last + 1]
    assert len(notice) > 1 and all(len(row.rstrip()) < 70 for row in notice)
    assert " ".join(row.strip() for row in notice) == " ".join(DEFAULT_NOTICE.split())


def _chunk(**fields: Any) -> str:
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "local", **fields})


def _read(processed: int, total: int = 11_000) -> str:
    """A chunk as llama.cpp sends it to a request with ``return_progress``, after each batch it read."""
    delta = {"role": "assistant", "content": None}
    return _chunk(choices=[{"index": 0, "delta": delta, "finish_reason": None}],
                  prompt_progress={"total": total, "cache": 0, "processed": processed, "time_ms": processed * 16})


def test_reading_a_long_prompt_shows_the_tokens_read_of_the_total(server: ScriptedServer, tmp_path: Path) -> None:
    events = (
        _read(0), _read(3_200), _read(11_000),
        _chunk(choices=[{"index": 0, "delta": {"content": ANSWER}, "finish_reason": None}]),
        _chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        _chunk(choices=[], usage={"prompt_tokens": 11_000, "completion_tokens": 6, "total_tokens": 11_006}),
    )
    server.enqueue(Reply(raw_events=events, chunk_delay_s=2.0))
    term = local_terminal(tmp_path, server)
    try:
        term.wait_for("pi>", timeout=LONG)
        start = term.mark()
        term.type(QUESTION)
        term.wait_for("Reading the prompt: 3,200 / 11,000 tokens…", timeout=LONG, since=start)
        term.wait_for(ANSWER, timeout=LONG, since=start)
        screen = term.wait_prompt(since=start, timeout=LONG)
    finally:
        term.close()
    assert server.requests[0]["return_progress"] is True  # asked of the embedded model's server only
    assert "Reading the prompt" not in screen  # a spinner: it leaves nothing in the scrollback
