"""Helpers for the UI tests: a scripted ChatModel, a project directory (the ``project`` fixture, served by
conftest), a REPL state around a real AgentSession, a pseudo-terminal and a status line."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import structured_summary
from rich.console import Console

from pi_compact.cancel import CancelToken
from pi_compact.cli.wiring import AppRuntimes
from pi_compact.llm.protocol import ChatModel, ChatRequest, Done, ModelInfo, StreamEvent, TextDelta, assistant_message
from pi_compact.messages import text_of
from pi_compact.options import AppOptions
from pi_compact.settings.files import load_settings
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.state import ReplState
from pi_compact.ui.status import StatusInfo


class FakeModel(ChatModel):
    """A ChatModel that replies with scripted texts (and ``summary`` to summary requests), recording requests."""

    def __init__(
        self, *texts: str, window: int = 8000, input_tokens: int = 1000, summary: str = structured_summary()
    ) -> None:
        self._info = ModelInfo("fake/model", "fake", window, 2000)
        self.texts = list(texts)
        self.summary = summary
        self.input_tokens = input_tokens
        self.requests: list[ChatRequest] = []

    @property
    def info(self) -> ModelInfo:
        return self._info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.requests.append(request)
        asked = text_of(request.messages[-1]["content"]) if request.messages else ""
        if "<conversation>" in asked:
            text = self.summary
        else:
            text = self.texts.pop(0) if self.texts else "ok"
        usage = {"input": self.input_tokens, "output": 10, "cacheRead": 0, "cacheWrite": 0,
                 "totalTokens": self.input_tokens + 10,
                 "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}}
        yield TextDelta(text)
        yield Done(assistant_message(self._info, [{"type": "text", "text": text}], stop_reason="stop", usage=usage))


SETTINGS = {"compaction": {"reserveTokens": 2000, "keepRecentTokens": 50}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    directory = tmp_path / "project"
    (directory / ".pi").mkdir(parents=True)
    (directory / ".pi" / "settings.json").write_text(json.dumps(SETTINGS))
    return directory


def make_state(project: Path, model: Any, **options: Any) -> tuple[ReplState, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None, highlight=False)
    renderer = TerminalRenderer(console)
    loaded = load_settings(project, {})
    app_options = AppOptions(cwd=project, model="fake/model", session=project / "s.jsonl", **options)
    runtimes = AppRuntimes(app_options)
    session = runtimes.build(loaded.settings, renderer, model=model)
    state = ReplState(console, renderer, runtimes, loaded, session, lambda work: work(CancelToken()), "fake/model")
    return state, buffer


def chat(state: ReplState, *texts: str) -> None:
    for text in texts:
        state.session.prompt(text)


def squeeze(buffer: io.StringIO) -> str:
    return " ".join(buffer.getvalue().split())






class Pty:
    """A pseudo-terminal: the child side is what TurnKeys watches, the master side is the keyboard."""

    def __init__(self) -> None:
        self.master, self.child = os.openpty()
        self.stream = os.fdopen(self.child, "r", closefd=False)

    def close(self) -> None:
        self.stream.close()
        os.close(self.master)
        os.close(self.child)





def info(**changes: object) -> StatusInfo:
    values: dict[str, object] = {
        "model": "openai/gpt-4o", "tokens": 12345, "window": 128000, "threshold": 111616, "from_usage": True,
        "auto_compact": True, "session_name": "2026-01-01_abc.jsonl",
    }
    values.update(changes)
    return StatusInfo(**values)  # type: ignore[arg-type]
