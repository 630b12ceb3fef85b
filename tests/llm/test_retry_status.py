"""Provider retries are visible while they happen: in the compaction spinner and in a turn's status."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from agent_harness import make_harness, summary_reply, two_finished_turns
from rich.console import Console, RenderableType
from scripted_server import ScriptedServer, server_error_reply

from pi_compact.agent.events import CompactionEnd, CompactionStart, MessageStart, Retry, event_to_json
from pi_compact.llm.failures import FailureKind
from pi_compact.ui.compaction_view import retry_label, spinner_text
from pi_compact.ui.renderer import TerminalRenderer


def shown(renderable: RenderableType | None) -> str:
    assert renderable is not None
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None, force_terminal=False).print(renderable)
    return buffer.getvalue()


def renderer() -> tuple[TerminalRenderer, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None, force_terminal=False, highlight=False)
    return TerminalRenderer(console, clock=lambda: 100.0), buffer


@pytest.mark.parametrize(
    ("kind", "status", "cause"),
    [
        ("server", 500, "500"),
        ("rate_limit", 429, "429"),
        ("rate_limit", None, "429"),
        ("rate_limit", 400, "429"),
        ("timeout", None, "a timeout"),
        ("connection", None, "a connection error"),
        ("empty_reply", None, "an empty reply"),
        ("unknown", None, "an error"),
    ],
)
def test_retry_label_names_the_attempt_and_the_cause(kind: FailureKind, status: int | None, cause: str) -> None:
    assert retry_label(2, 3, kind, status) == f"retrying (2/3) after {cause}…"


def test_the_label_is_chosen_by_the_kind_not_by_words_in_the_providers_text() -> None:
    # A server error whose text reads like a timeout, a connection error or a status is still a server error.
    view, _ = renderer()
    view(MessageStart("assistant"))
    view(Retry(1, 3, 2000, "Connection error: upstream timed out", kind="server", status=502))
    assert "Retrying (1/3) after 502…" in shown(view.current_view())
    view.close()
    assert retry_label(1, 3, "bad_request") == "retrying (1/3) after an error…"
    view, _ = renderer()
    view(MessageStart("assistant"))
    view(Retry(1, 3, 2000, "503 Request timed out", kind="connection"))
    assert "Retrying (1/3) after a connection error…" in shown(view.current_view())
    view.close()


def test_spinner_text_carries_a_pending_retry() -> None:
    text = spinner_text("manual", None, 14, retry_label(2, 3, "server", 500))
    assert text == "Compacting context… retrying (2/3) after 500… 14s (Esc or Ctrl-C to cancel)"


def test_compaction_spinner_shows_the_retry_instead_of_printing_it() -> None:
    view, buffer = renderer()
    view(CompactionStart("threshold", 91.0))
    view(Retry(2, 3, 4000, "500 The server had an error", kind="server", status=500))
    assert "Auto-compacting (context 91% full)… retrying (2/3) after 500…" in shown(view.current_view())
    assert "Provider error" not in buffer.getvalue()
    view(CompactionEnd("threshold", None, error_message="Auto-compaction failed: 500"))
    view(CompactionStart("manual"))
    assert "retrying" not in shown(view.current_view())  # the next compaction starts clean
    view.close()


def test_turn_status_shows_the_retry_while_waiting() -> None:
    view, buffer = renderer()
    view(MessageStart("assistant"))
    view(Retry(1, 3, 2000, "429 rate limit: slow down", kind="rate_limit", status=429))
    assert "Retrying (1/3) after 429…" in shown(view.current_view())
    assert "Provider error: 429 rate limit: slow down — retry 1/3 in 2.0s" in buffer.getvalue()
    view.close()


def test_summarizer_retries_reach_the_session_events_inside_the_compaction(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(server_error_reply(500), summary_reply())
    h.session.compact()
    kinds = [type(e) for e in h.events if isinstance(e, (CompactionStart, Retry, CompactionEnd))]
    assert kinds == [CompactionStart, Retry, CompactionEnd]
    retry = next(e for e in h.events if isinstance(e, Retry))
    assert (retry.attempt, retry.max_attempts) == (1, 2)
    assert retry.error_message.startswith("500 ")
    assert (retry.kind, retry.status) == ("server", 500)
    end = next(e for e in h.events if isinstance(e, CompactionEnd))
    assert end.result is not None and end.result["details"]["source"] == "model"


def test_the_json_retry_event_keeps_pis_keys() -> None:
    event = Retry(1, 3, 2000, "429 rate limit: slow down", kind="rate_limit", status=429)
    assert event_to_json(event) == {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000,
                                    "errorMessage": "429 rate limit: slow down"}
