"""The real CLI in tmux: a Terminal on a private socket, and what the scripted server was asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripted_server import ScriptedServer

CLI = Path(sys.executable).with_name("pi-compact")


WINDOW = 4000


SETTINGS = {"compaction": {"reserveTokens": 1000, "keepRecentTokens": 100}}  # threshold 3,000 tokens


LONG = 60  # timeout for steps that may wait for litellm's import in the CLI (~5 s, more on a busy machine)


class Terminal:
    """A tmux session on a private socket running the CLI."""

    def __init__(
        self, root: Path, server: ScriptedServer, session_file: Path | None = None, model_args: str | None = None,
        settings: dict[str, Any] | None = None, with_session_flag: bool = True, env: dict[str, str] | None = None,
        width: int = 120,
    ) -> None:
        self.root = root
        self.socket = root / "tmux.sock"
        self.exit_file = root / "exit-code"
        self.stderr_file = root / "stderr"
        self.project = root / "project"
        self.session_file = session_file or root / "session.jsonl"
        (self.project / ".pi").mkdir(parents=True)
        (self.project / ".pi" / "settings.json").write_text(json.dumps(SETTINGS if settings is None else settings))
        (root / "home").mkdir()
        if model_args is None:
            model_args = f"--model openai/scripted --api-base {server.base_url} --api-key x --context-window {WINDOW}"
        command = (  # the shell ignores Ctrl-C (a no-op trap; the CLI still gets it) so it can record the exit code
            f"trap : INT; {CLI} {model_args} {f'--session {self.session_file}' if with_session_flag else ''}"
            f" 2> {self.stderr_file}; "
            f"echo $? > {self.exit_file}"
        )
        env = {
            "HOME": str(root / "home"), "PI_CODING_AGENT_DIR": str(root / "agent"), "PROMPT_TOOLKIT_NO_CPR": "1",
            "TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **(env or {}),
        }
        env_args = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
        self.tmux("-u", "new-session", "-d", "-s", "pi", "-x", str(width), "-y", "50", "-c", str(self.project),
                  *env_args, "sh", "-c", command)

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        # An explicit env: GNU readline (imported by pytest) exports COLUMNS=80 and LINES=24 into the C-level
        # environment, which a child would inherit and rich would then prefer over the real pane size.
        return subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True,
                              env=dict(os.environ))

    def screen(self) -> str:
        """The visible pane plus its scrollback, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", "pi").stdout

    def type(self, text: str, enter: bool = True) -> None:
        self.tmux("send-keys", "-t", "pi", "-l", text)
        if enter:
            self.tmux("send-keys", "-t", "pi", "Enter")

    def key(self, name: str) -> None:
        self.tmux("send-keys", "-t", "pi", name)

    def wait_for(self, check: Callable[[str], bool] | str, timeout: float = 15.0, since: int = 0) -> str:
        """Poll the screen (from character ``since`` on) until ``check`` holds; the screen then."""
        predicate = (lambda screen: check in screen) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()[since:]
            if predicate(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout}s waiting for {check!r}; screen:\n{screen}")

    def wait_prompt(self, since: int, timeout: float = 15.0) -> str:
        """Wait until the REPL is idle again: an empty prompt is the last line after ``since``."""
        return self.wait_for(lambda s: bool(s.strip()) and s.rstrip().splitlines()[-1].strip() == "pi>",
                             timeout=timeout, since=since)

    def mark(self) -> int:
        """A position in the scrollback: later waits look only at what came after it."""
        return len(self.screen().rstrip())

    def alive(self) -> bool:
        return self.tmux("has-session", "-t", "pi").returncode == 0

    def wait_exit(self, timeout: float = 15.0) -> int:
        """Wait for the CLI to end (its pane closes); its exit code."""
        deadline = time.monotonic() + timeout
        while (self.alive() or not self.exit_file.exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not self.alive(), f"still running; screen:\n{self.screen()}"
        return int(self.exit_file.read_text())

    def close(self) -> None:
        self.tmux("kill-server")


def user_texts(server: ScriptedServer) -> list[str]:
    """The last user message of every request the server received."""
    texts = []
    for request in server.requests:
        content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
        texts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return texts
