"""TerminalRenderer: events in, terminal text out (a rich Console writing into a string buffer)."""

from __future__ import annotations

import io
from typing import Any

from builders import usage
from rich.console import Console, RenderableType
from rich.text import Text

from pi_compact.agent.events import (
    AgentEnd,
    AgentStart,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Notice,
    Retry,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from pi_compact.ui.renderer import TerminalRenderer, result_lines, tool_line


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(show_thinking: bool = True) -> tuple[TerminalRenderer, io.StringIO, FakeClock]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None, force_terminal=False, highlight=False)
    clock = FakeClock()
    return TerminalRenderer(console, show_thinking=show_thinking, clock=clock), buffer, clock


def text_of(renderable: RenderableType | None) -> str:
    assert renderable is not None
    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None, force_terminal=False).print(renderable)
    return buffer.getvalue()


def assistant(text: str = "", stop: str = "stop", thinking: str = "", error: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking:
        content.append({"type": "thinking", "thinking": thinking})
    if text:
        content.append({"type": "text", "text": text})
    message: dict[str, Any] = {"role": "assistant", "content": content, "stopReason": stop}
    if error:
        message["errorMessage"] = error
    return message


def compaction_result() -> dict[str, Any]:
    return {
        "summary": "## Goal\nparse",
        "firstKeptEntryId": "abc",
        "tokensBefore": 12000,
        "estimatedTokensAfter": 3000,
        "details": {"readFiles": ["a.py", "b.py"], "modifiedFiles": ["c.py"], "source": "model",
                    "summarizedEntries": 7, "keptMessages": 3, "splitTurn": False},
    }


def test_manual_compaction_spinner_names_the_action_and_elapsed_seconds() -> None:
    renderer, _, clock = make()
    renderer(CompactionStart("manual"))
    clock.now += 3
    assert "Compacting context… 3s" in text_of(renderer.current_view())


def test_threshold_compaction_spinner_shows_how_full_the_context_is() -> None:
    renderer, _, _ = make()
    renderer(CompactionStart("threshold", 87.4))
    assert "Auto-compacting (context 87% full)… 0s" in text_of(renderer.current_view())


def test_overflow_compaction_spinner_says_it_will_retry() -> None:
    renderer, _, _ = make()
    renderer(CompactionStart("overflow"))
    assert "Context overflow — compacting and retrying…" in text_of(renderer.current_view())


def test_compaction_end_replaces_the_spinner_with_the_result_block_and_duration() -> None:
    renderer, buffer, clock = make()
    renderer(CompactionStart("manual"))
    clock.now += 2.5
    renderer(CompactionEnd("manual", compaction_result()))
    out = buffer.getvalue()
    assert renderer.current_view() is None
    assert "[compaction]" in out
    assert "12,000 → ~3,000 tokens" in out
    assert "Summarized 7 entries, kept 3 messages" in out
    assert "Files: 2 read, 1 modified" in out
    assert "2.5s" in out


def test_a_summary_made_in_the_background_says_so_in_the_result_block() -> None:
    renderer, buffer, _ = make()
    result = compaction_result()
    result["details"]["background"] = True
    renderer(CompactionStart("threshold", 71.0))
    renderer(CompactionEnd("threshold", result))
    assert "Summary by the model, made in the background" in buffer.getvalue()


def test_cancelled_compaction_says_nothing_changed() -> None:
    renderer, buffer, _ = make()
    renderer(CompactionStart("threshold", 91.0))
    renderer(CompactionEnd("threshold", None, aborted=True))
    assert buffer.getvalue().strip() == "Compaction cancelled, nothing changed."


def test_failed_compaction_shows_the_error_and_what_to_do() -> None:
    renderer, buffer, _ = make()
    renderer(CompactionStart("manual"))
    renderer(CompactionEnd("manual", None, error_message="Compaction failed: connection refused"))
    out = " ".join(buffer.getvalue().split())
    assert "Compaction failed: connection refused" in out
    assert "run /compact again" in out


def test_a_failure_that_mentions_nothing_to_compact_is_still_shown_as_a_failure() -> None:
    # Whether a compaction was skipped is the end event's typed field, not a phrase in the message.
    renderer, buffer, _ = make()
    renderer(CompactionStart("manual"))
    renderer(CompactionEnd("manual", None, error_message="Compaction failed: the extension said nothing to compact"))
    assert "run /compact again" in " ".join(buffer.getvalue().split())


def test_a_skipped_compaction_gives_no_advice() -> None:
    renderer, buffer, _ = make()
    renderer(CompactionStart("manual"))
    text = "Nothing to compact (session too small)."
    renderer(CompactionEnd("manual", None, error_message=text, skipped="too_small"))
    assert buffer.getvalue().strip() == "Nothing to compact (session too small)."


def test_retry_after_overflow_compaction_is_announced() -> None:
    renderer, buffer, _ = make()
    renderer(CompactionStart("overflow"))
    renderer(CompactionEnd("overflow", compaction_result(), will_retry=True))
    assert "Retrying the request with the compacted context…" in buffer.getvalue()


def test_model_text_with_rich_markup_is_printed_literally() -> None:
    renderer, buffer, _ = make()
    renderer(MessageEnd(assistant("Use [bold]x[/bold] and [red]y[/]")))
    assert "Use [bold]x[/bold] and [red]y[/]" in buffer.getvalue()


def test_streamed_text_with_markup_is_shown_literally_while_streaming() -> None:
    renderer, _, _ = make()
    renderer(MessageStart("assistant"))
    renderer(MessageUpdate("text", "[bold]x"))
    renderer(MessageUpdate("text", "[/bold] done"))
    assert "[bold]x[/bold] done" in text_of(renderer.current_view())


def test_notice_and_tool_argument_with_markup_are_printed_literally() -> None:
    renderer, buffer, _ = make()
    renderer(Notice("[bold]careful[/bold]", "warning"))
    renderer(ToolExecutionStart("c1", "bash", {"command": "echo [bold]x[/bold]"}))
    out = buffer.getvalue()
    assert "[bold]careful[/bold]" in out
    assert "▸ bash echo [bold]x[/bold]" in out


def test_streamed_markdown_is_rendered_as_it_arrives() -> None:
    renderer, _, _ = make()
    renderer(AgentStart())
    renderer(MessageStart("assistant"))
    renderer(MessageUpdate("text", "Hello **wor"))
    renderer(MessageUpdate("text", "ld**"))
    shown = text_of(renderer.current_view())
    assert "Hello world" in shown
    assert "**" not in shown


def test_final_reply_is_printed_once_as_markdown() -> None:
    renderer, buffer, _ = make()
    renderer(MessageStart("assistant"))
    renderer(MessageUpdate("text", "# Title\n\nsome `code`"))
    renderer(MessageEnd(assistant("# Title\n\nsome `code`")))
    renderer(AgentEnd())
    out = buffer.getvalue()
    assert out.count("Title") == 1
    assert "some code" in out
    assert renderer.current_view() is None


def test_compaction_spinner_replaces_the_streaming_view() -> None:
    renderer, _, _ = make()
    renderer(MessageStart("assistant"))
    renderer(MessageUpdate("text", "partial"))
    renderer(CompactionStart("threshold", 80.0))
    shown = text_of(renderer.current_view())
    assert "Auto-compacting" in shown
    assert "partial" not in shown


def test_thinking_is_dimmed_when_shown() -> None:
    renderer, buffer, _ = make()
    renderer(MessageEnd(assistant("answer", thinking="pondering")))
    assert "pondering" in buffer.getvalue()
    assert "answer" in buffer.getvalue()


def test_thinking_is_hidden_when_the_setting_is_off() -> None:
    renderer, buffer, _ = make(show_thinking=False)
    renderer(MessageStart("assistant"))
    renderer(MessageUpdate("thinking", "secret pondering"))
    assert "secret pondering" not in text_of(renderer.current_view())
    renderer(MessageEnd(assistant("answer", thinking="secret pondering")))
    assert "secret pondering" not in buffer.getvalue()
    assert "answer" in buffer.getvalue()


def test_tool_call_is_one_line_with_its_key_argument() -> None:
    line = tool_line("read", {"offset": 10, "path": "src/parser.py", "limit": 50})
    assert line.plain == "▸ read src/parser.py"


def test_tool_line_shows_only_the_first_line_of_a_multi_line_command() -> None:
    assert tool_line("bash", {"command": "set -e\nmake test"}).plain == "▸ bash set -e …"


def test_tool_result_is_collapsed_to_four_lines_with_a_count_of_the_rest() -> None:
    result = {"content": [{"type": "text", "text": "\n".join(f"line {i}" for i in range(1, 11))}]}
    plain = result_lines(result, is_error=False).plain
    assert plain.splitlines() == ["  ⎿ line 1", "    line 2", "    line 3", "    line 4", "    … 6 more lines"]


def test_error_tool_result_is_styled_red() -> None:
    result = {"content": [{"type": "text", "text": "No such file: x.py"}]}
    text = result_lines(result, is_error=True)
    assert any(span.style == "red" and text.plain[span.start:span.end] == "No such file: x.py" for span in text.spans)


def test_tool_output_escape_sequences_are_stripped() -> None:
    renderer, buffer, _ = make()
    result = {"content": [{"type": "text", "text": "\x1b[31mred\x1b[0m plain\x07"}]}
    renderer(ToolExecutionEnd("c1", "bash", result, False))
    out = buffer.getvalue()
    assert "red plain" in out
    assert "\x1b" not in out and "\x07" not in out


def test_empty_tool_result_says_no_output() -> None:
    assert result_lines({"content": []}, is_error=False).plain == "  ⎿ (no output)"


def test_retry_is_one_yellow_line() -> None:
    renderer, buffer, _ = make()
    renderer(Retry(1, 3, 2000, "Rate limit reached"))
    assert buffer.getvalue().strip() == "Provider error: Rate limit reached — retry 1/3 in 2.0s"


def test_cancelled_reply_keeps_the_text_that_had_streamed_in() -> None:
    renderer, buffer, _ = make()
    renderer(MessageStart("assistant"))
    renderer(MessageUpdate("text", "half an answ"))
    renderer(MessageEnd(assistant(stop="aborted", error="Request was aborted")))
    out = buffer.getvalue()
    assert "half an answ" in out
    assert "Cancelled." in out


def test_error_reply_shows_the_provider_message() -> None:
    renderer, buffer, _ = make()
    renderer(MessageEnd(assistant(stop="error", error="401 invalid api key")))
    assert "Error: 401 invalid api key" in buffer.getvalue()


def test_working_spinner_counts_seconds_and_names_the_cancel_keys() -> None:
    renderer, _, clock = make()
    renderer(AgentStart())
    clock.now += 4
    assert "Working… 4s (Esc or Ctrl-C to cancel)" in text_of(renderer.current_view())


def test_user_message_end_prints_nothing() -> None:
    renderer, buffer, _ = make()
    renderer(MessageEnd({"role": "user", "content": "[bold]hi[/bold]"}))
    assert buffer.getvalue() == ""


def test_terminal_console_draws_the_spinner_live_and_clears_it() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, force_terminal=True, color_system=None)
    renderer = TerminalRenderer(console)
    renderer(CompactionStart("manual"))
    renderer.close()
    assert "Compacting context…" in buffer.getvalue()
    assert renderer.current_view() is None
    assert isinstance(tool_line("x", {}), Text)


def test_a_summary_by_the_embedded_local_model_reads_free_in_the_compaction_block() -> None:
    from pi_compact.ui.compaction_view import spent_text

    unpriced = {**usage(2_000, 100), "cost": {"total": 0.0}}
    assert spent_text(unpriced, "local") == " · 2,000 tokens in, 100 out · free"
    assert spent_text(unpriced, "openai/new-model") == " · 2,000 tokens in, 100 out · cost unknown"


def test_the_compaction_block_names_the_summary_tokens_read_from_the_cache() -> None:
    from pi_compact.ui.compaction_view import spent_text

    cached = {**usage(2_000, 100), "cacheRead": 130_000, "cost": {"total": 0.0457}}
    assert spent_text(cached, "anthropic/claude-sonnet-4-5") == \
        " · 132,000 tokens in (130,000 from the cache), 100 out · $0.0457"
