"""The status line: its contents, and that it never waits for a model that is still resolving."""

from __future__ import annotations

from pathlib import Path

from ui_harness import info  # noqa: F401

from pi_compact.agent.session import AgentSession
from pi_compact.cli.wiring import LazyModel
from pi_compact.llm.protocol import ChatModel
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings
from pi_compact.ui.status import compacted_times, gather_status, status_text


def test_status_line_has_model_tokens_window_percent_left_and_session_file() -> None:
    assert status_text(info()).plain == (
        "openai/gpt-4o · 12,345/128,000 tokens (9.6%) · 99,271 left before auto-compaction · 2026-01-01_abc.jsonl"
    )


def test_status_line_marks_an_estimate_with_a_tilde() -> None:
    assert "~12,345/128,000 tokens" in status_text(info(from_usage=False)).plain


def test_status_line_says_when_auto_compaction_is_off() -> None:
    line = status_text(info(auto_compact=False)).plain
    assert "auto-compaction off" in line
    assert "left before" not in line


def test_status_line_shows_an_unknown_window_as_an_ellipsis() -> None:
    line = status_text(info(window=None, threshold=None, from_usage=False)).plain
    assert "~12,345/… tokens" in line
    assert "… left before auto-compaction" in line


def test_status_line_turns_red_above_ninety_percent() -> None:
    line = status_text(info(tokens=120000))
    assert any(span.style == "bold red" and line.plain[span.start:span.end] == "(94%)" for span in line.spans)


def test_status_line_prints_a_bracketed_model_name_literally() -> None:
    assert status_text(info(model="[bold]m[/bold]")).plain.startswith("[bold]m[/bold] · ")


def test_status_does_not_resolve_a_lazy_model(tmp_path: Path) -> None:
    resolved: list[int] = []

    def resolve() -> ChatModel:
        resolved.append(1)
        raise AssertionError("the status line must not resolve the model")

    store = SessionStore.create(tmp_path / "s.jsonl", str(tmp_path), 0)
    session = AgentSession(store=store, model=LazyModel(resolve), settings=Settings(), tools=[], system_prompt="",
                           cwd=tmp_path, emit=lambda event: None)
    status = gather_status(session, "openai/gpt-4o")
    assert resolved == []
    assert status.window is None
    assert status.model == "openai/gpt-4o"
    assert status.session_name == "s.jsonl"


def test_loaded_session_reports_how_often_it_was_compacted() -> None:
    assert compacted_times(1) == "Session compacted 1 time"
    assert compacted_times(3) == "Session compacted 3 times"


def test_status_line_shows_the_tool_output_cleared_from_the_request() -> None:
    line = status_text(info(cleared=96_000)).plain
    assert "12,345/128,000 tokens (9.6%) · 96,000 tool tokens cleared · 99,271 left" in line
    assert "cleared" not in status_text(info()).plain
