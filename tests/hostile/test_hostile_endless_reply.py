"""A reply that never ends (issue 30.9): the scripted server streams text forever, and the reply is stopped at
``retry.provider.maxReplyBytes`` or ``maxReplyMs`` with one clear sentence, keeping what streamed, dropping the
connection, and never retried; through the real CLI its memory stays bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from model_paths import chat_model
from scripted_server import Reply, ScriptedServer

import pi_compact
from pi_compact.llm.protocol import ChatRequest, Done, ModelInfo, TextDelta
from pi_compact.settings import RetrySettings

INFO = ModelInfo("openai/scripted", "openai", 128000, None)
HELLO = ChatRequest(system="s", messages=[{"role": "user", "content": "hi", "timestamp": 1}])
CHUNK = "endless " * 125  # 1,000 characters a chunk
# The CLI, leaving its own peak memory (VmHWM: since exec, unlike ru_maxrss, which counts the parent's pages
# a fork shared) in the file named by its first argument.
MEASURED = """
import atexit, sys
status = sys.argv.pop(1)
atexit.register(lambda: open(status, "w").write(open("/proc/self/status").read()))
sys.argv[0] = "pi-compact"
from pi_compact.cli import main
main()
"""


def _run(server: ScriptedServer, model_path: str, retry: RetrySettings) -> tuple[str, dict[str, object]]:
    model = chat_model(model_path, INFO, api_base=server.base_url, api_key="test", retry=retry)
    streamed: list[str] = []
    for event in model.stream(HELLO):
        if isinstance(event, TextDelta):
            streamed.append(event.text)
        elif isinstance(event, Done):
            return "".join(streamed), event.message
    raise AssertionError("the stream ended without a Done")


def test_an_endless_reply_stops_at_the_size_cap_and_keeps_what_streamed(
    scripted_server: ScriptedServer, model_path: str
) -> None:
    scripted_server.enqueue(Reply(endless=CHUNK))
    retry = RetrySettings(max_retries=2, base_delay_ms=1, max_reply_bytes=1_000_000)
    streamed, message = _run(scripted_server, model_path, retry)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == (
        f"Stopped the reply from {scripted_server.base_url}: it passed 1 MB without ending "
        "(retry.provider.maxReplyBytes); what it streamed until then is kept."
    )
    assert message["content"] == [{"type": "text", "text": streamed}]
    count = streamed.count("\n")
    assert streamed == "".join(f"{CHUNK}{number}\n" for number in range(count))
    assert 1_000_000 < len(streamed) <= 1_000_000 + len(CHUNK) + 10
    assert scripted_server.hung_up.wait(5)  # the connection was dropped, not left streaming
    assert len(scripted_server.requests) == 1  # never retried: it would run away again


def test_a_slow_endless_reply_stops_at_the_time_cap_and_keeps_what_streamed(
    scripted_server: ScriptedServer, model_path: str
) -> None:
    scripted_server.enqueue(Reply(endless="tick ", chunk_delay_s=0.05))
    started = time.monotonic()
    streamed, message = _run(scripted_server, model_path, RetrySettings(max_retries=2, max_reply_ms=1500))
    assert time.monotonic() - started < 10
    assert message["errorMessage"] == (
        f"Stopped the reply from {scripted_server.base_url}: it was still streaming after 1.5 s "
        "(retry.provider.maxReplyMs); what it streamed until then is kept."
    )
    assert streamed.startswith("tick 0\ntick 1\n") and message["content"] == [{"type": "text", "text": streamed}]
    assert scripted_server.hung_up.wait(5)
    assert len(scripted_server.requests) == 1


def test_a_line_that_never_ends_is_stopped_before_it_fills_memory(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(endless="y" * 65536, endless_line=True))
    retry = RetrySettings(max_retries=2, base_delay_ms=1, max_reply_bytes=1_000_000)
    streamed, message = _run(scripted_server, "direct", retry)  # litellm's HTTP stack reads the lines there
    assert (streamed, message["stopReason"]) == ("", "error")
    assert message["errorMessage"] == (
        f"Stopped the reply from {scripted_server.base_url}: an event of the stream passed 2,065,536 bytes "
        "without ending (twice retry.provider.maxReplyBytes); what it streamed until then is kept."
    )
    assert scripted_server.hung_up.wait(5)
    assert len(scripted_server.requests) == 1


def test_print_mode_stops_an_endless_reply_with_one_line_and_bounded_memory(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"retry": {"provider": {"maxReplyBytes": 4_000_000}}}))
    session = tmp_path / "s.jsonl"
    scripted_server.enqueue(Reply(endless=CHUNK * 4))
    package_root = str(Path(pi_compact.__file__).resolve().parents[1])
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent),
           "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])}
    status_file = tmp_path / "status"
    process = subprocess.run(
        [sys.executable, "-c", MEASURED, str(status_file), "--model", "openai/scripted", "--api-base",
         scripted_server.base_url, "--api-key", "k", "--context-window", "8000000", "--session", str(session),
         "-p", "talk forever"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,  # the original code never stops
    )
    err = process.stderr
    peak_kb = next(int(line.split()[1]) for line in status_file.read_text().splitlines() if line.startswith("VmHWM:"))
    peak_mb = peak_kb / 1024
    # (A window this large keeps the post-turn compaction check, which counts the stopped reply, quiet.)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"pi-compact: Stopped the reply from {scripted_server.base_url}: it passed 4 MB without ending "
                     "(retry.provider.maxReplyBytes); what it streamed until then is kept."], err
    assert process.returncode != 0
    last = json.loads(session.read_text(encoding="utf-8").splitlines()[-1])["message"]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert len(last["content"][0]["text"]) > 4_000_000
    assert peak_mb < 200, f"peak memory {peak_mb:.0f} MB"
