"""Slash commands against a real AgentSession and session file; only the model is faked.

``FakeModel`` answers each request with the next scripted text (it fakes only the model). One test
switches to a litellm model served by the scripted server, so that path is the real one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import structured_summary
from scripted_server import Reply, ScriptedServer
from ui_harness import SETTINGS, FakeModel, chat, make_state, squeeze

from pi_compact.errors import SessionError
from pi_compact.messages import text_of
from pi_compact.session.store import SessionStore
from pi_compact.ui.commands import COMMANDS, argument_options, dispatch, is_command
from pi_compact.ui.repl import COMMAND_NAMES


def test_unknown_command_prints_a_hint_and_sends_nothing(project: Path) -> None:
    model = FakeModel()
    state, buffer = make_state(project, model)
    assert dispatch(state, "/frobnicate now") == "continue"
    assert "Unknown command /frobnicate; type /help for the list." in buffer.getvalue()
    assert model.requests == []


def test_a_slash_word_is_a_command_but_a_path_is_a_prompt() -> None:
    assert is_command("/compact focus on the parser")
    assert not is_command("/usr/bin/env is missing on this machine")
    assert not is_command("why does / fail")


def test_compact_on_an_empty_session_says_nothing_to_compact(project: Path) -> None:
    model = FakeModel()
    state, buffer = make_state(project, model)
    dispatch(state, "/compact")
    assert "Nothing to compact (no messages yet)." in buffer.getvalue()
    assert model.requests == []


def test_compact_sends_the_instructions_and_prints_the_block(project: Path) -> None:
    model = FakeModel("first answer " * 50, "second answer " * 50)
    state, buffer = make_state(project, model)
    chat(state, "explain the lexer " * 40, "now the parser " * 40)
    dispatch(state, "/compact focus on the parser")
    asked = [text_of(request.messages[0]["content"]) for request in model.requests[2:]]
    assert any("<conversation>" in text and "focus on the parser" in text for text in asked)
    assert state.session.compactions == 1
    out = squeeze(buffer)
    assert "[compaction]" in out
    assert "Summary by the model" in out
    assert "fake/model ·" in out  # the status line follows


def test_summary_shows_the_latest_compaction_summary_in_full(project: Path) -> None:
    model = FakeModel("a " * 300, "b " * 300, summary=structured_summary("MARKER-42"))
    state, buffer = make_state(project, model)
    chat(state, "one " * 100, "two " * 100)
    dispatch(state, "/compact")
    buffer.truncate(0)
    dispatch(state, "/summary")
    out = buffer.getvalue()
    assert "Ship the feature MARKER-42" in out
    assert "Critical Context" in out


def test_summary_before_any_compaction_says_there_is_none(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/summary")
    assert "No compaction yet" in buffer.getvalue()


def test_context_shows_window_threshold_keep_recent_and_estimator(project: Path) -> None:
    state, buffer = make_state(project, FakeModel(input_tokens=1500))
    chat(state, "hello")
    dispatch(state, "/context")
    out = squeeze(buffer)
    assert "1,510 tokens (provider usage + estimate) / 8,000 window (19%)" in out
    assert "Threshold 6,000 tokens (window − reserveTokens 2,000) · 4,490 tokens left" in out
    assert "Keep recent 50 tokens (keepRecentTokens)" in out
    assert "Estimator auto (CJK-aware)" in out
    assert "Last usage input 1,500 · output 10 · cache read 0 · total 1,510" in out
    assert "Compactions 0 in this session" in out


def test_context_after_compaction_breaks_down_summary_kept_tail_and_new(project: Path) -> None:
    model = FakeModel("a " * 300, "b " * 300, "c")
    state, buffer = make_state(project, model)
    chat(state, "one " * 100, "two " * 100)
    dispatch(state, "/compact")
    chat(state, "three")
    buffer.truncate(0)
    dispatch(state, "/context")
    out = squeeze(buffer)
    assert "Breakdown summary ~" in out
    assert "new ~" in out and "(2 messages)" in out
    assert "Compactions 1 in this session" in out


def test_settings_lists_every_value_with_its_source(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/settings")
    lines = buffer.getvalue().splitlines()
    project_file = str(project / ".pi" / "settings.json")
    reserve = next(line for line in lines if "compaction.reserveTokens" in line)
    assert reserve.split()[1:] == ["2000", project_file]
    retries = next(line for line in lines if "retry.maxRetries" in line)
    assert retries.split()[1:] == ["3", "default"]
    model_row = next(line for line in lines if line.strip().startswith("model "))
    assert model_row.split()[1:] == ["fake/model", "CLI", "flag", "--model"]


def test_settings_names_the_cli_flag_that_turned_auto_compaction_off(project: Path) -> None:
    state, buffer = make_state(project, FakeModel(), auto_compact=False)
    dispatch(state, "/settings")
    row = next(line for line in buffer.getvalue().splitlines() if "auto-compaction (now)" in line)
    assert row.split()[2:] == ["off", "CLI", "flag", "--no-auto-compact"]


def test_settings_name_autocompact_when_it_was_switched_off_in_the_session(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/autocompact off")
    dispatch(state, "/settings")
    row = next(line for line in buffer.getvalue().splitlines() if "auto-compaction (now)" in line)
    assert row.split()[2:] == ["off", "/autocompact"]


def test_compact_instructions_may_start_on_the_next_line(project: Path) -> None:
    model = FakeModel("a " * 300, "b " * 300)
    state, _ = make_state(project, model)
    chat(state, "one " * 100, "two " * 100)
    dispatch(state, "/compact\nkeep the parser details")
    asked = [text_of(request.messages[0]["content"]) for request in model.requests[2:]]
    assert any("keep the parser details" in text for text in asked)
    assert state.session.compactions == 1


def test_settings_reload_applies_the_changed_file_and_warns_about_bad_values(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    settings_file = project / ".pi" / "settings.json"
    settings_file.write_text(json.dumps({"compaction": {"reserveTokens": "big", "keepRecentTokens": 77}}))
    dispatch(state, "/settings reload")
    out = squeeze(buffer)
    assert f"Ignoring compaction.reserveTokens in {settings_file}: expected a whole number >= 0" in out
    assert "Settings reloaded (1 warning)." in out
    assert state.session.settings.compaction.keep_recent_tokens == 77
    assert state.session.settings.compaction.reserve_tokens == 16384  # the bad value fell back to the default


def test_autocompact_off_turns_threshold_compaction_off_and_the_status_says_so(project: Path) -> None:
    state, buffer = make_state(project, FakeModel(input_tokens=7000))
    dispatch(state, "/autocompact off")
    chat(state, "hello")  # 7,000 tokens is past the 6,000 threshold
    assert state.session.compactions == 0
    state.print_status()
    assert "auto-compaction off" in buffer.getvalue()


def test_autocompact_without_argument_reports_the_state(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/autocompact")
    assert "Auto-compaction is on. Usage: /autocompact on|off." in buffer.getvalue()


def test_model_without_argument_shows_the_window(project: Path) -> None:
    state, buffer = make_state(project, FakeModel(window=8000))
    dispatch(state, "/model")
    assert "Model fake/model: window 8,000 tokens, max output 2,000." in buffer.getvalue()


def test_model_switch_to_a_smaller_window_compacts_first(
    project: Path, scripted_server: ScriptedServer
) -> None:
    settings = {**SETTINGS, "models": {"openai/small": {"contextWindow": 3000}}, "compaction": {
        "reserveTokens": 1000, "keepRecentTokens": 50}}
    (project / ".pi" / "settings.json").write_text(json.dumps(settings))
    state, buffer = make_state(project, FakeModel("a " * 300, "b " * 300, input_tokens=2500),
                               api_base=scripted_server.base_url, api_key="test")
    chat(state, "one " * 100, "two " * 100)
    scripted_server.enqueue(Reply(text=structured_summary("switch"), repeat=True))
    dispatch(state, "/model openai/small")
    assert state.session.model.info.context_window == 3000
    assert state.session.compactions == 1
    systems = [request["messages"][0]["content"] for request in scripted_server.requests]
    assert systems and all(text.startswith("You condense conversations") for text in systems)
    assert "Switched to openai/small (window 3,000 tokens)." in buffer.getvalue()


def test_context_window_flag_belongs_to_the_start_model_across_switches(project: Path) -> None:
    (project / ".pi" / "settings.json").write_text(json.dumps({**SETTINGS, "models": {"openai/small": {
        "contextWindow": 3000}}}))
    state, buffer = make_state(project, FakeModel(window=5000), context_window=5000, api_key="test")
    windows = []
    for name in ("fake/model", "openai/small", "openai/gpt-4o", "fake/model"):
        dispatch(state, f"/model {name}")
        windows.append((state.session.model.info.model, state.session.model.info.context_window))
    # The flag's window for the start model (unknown to litellm), each other model its own window.
    assert windows == [("fake/model", 5000), ("openai/small", 3000), ("openai/gpt-4o", 128000),
                       ("fake/model", 5000)]
    assert "unknown" not in buffer.getvalue()
    assert "Switched to fake/model (window 5,000 tokens)." in buffer.getvalue()


def test_session_shows_the_file_its_entries_and_size(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    chat(state, "hello")
    dispatch(state, "/session")
    out = squeeze(buffer)
    size = (project / "s.jsonl").stat().st_size
    assert f"File {project / 's.jsonl'}" in out
    assert f"Size {size:,} bytes" in out
    assert "Entries 4" in out  # model and thinking level (as pi opens a session), question, answer


def test_new_starts_a_fresh_session_and_leaves_the_old_file_alone(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    chat(state, "hello")
    old = (project / "s.jsonl").read_bytes()
    dispatch(state, "/new")
    assert state.session.store.path != project / "s.jsonl"
    assert state.session.messages == []
    assert (project / "s.jsonl").read_bytes() == old
    assert "New session:" in buffer.getvalue()


def test_help_lists_every_command_and_the_newline_keys(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/help")
    out = buffer.getvalue()
    for command in COMMANDS:
        assert command.name in out
    assert "Alt-Enter (Esc, Enter) or Ctrl-J" in out


def test_quit_and_exit_end_the_repl(project: Path) -> None:
    state, _ = make_state(project, FakeModel())
    assert dispatch(state, "/quit") == "quit"
    assert dispatch(state, "/exit") == "quit"


def test_arguments_complete_for_autocompact_settings_and_model(project: Path) -> None:
    (project / ".pi" / "settings.json").write_text(json.dumps({"models": {"openai/small": {"contextWindow": 3000}}}))
    state, _ = make_state(project, FakeModel())
    assert argument_options(state, "/autocompact") == ("on", "off")
    assert argument_options(state, "/settings") == ("reload",)
    assert argument_options(state, "/model") == ["fake/model", "openai/small"]


def test_the_prompt_completes_the_same_commands_before_the_session_has_loaded() -> None:
    assert COMMAND_NAMES == tuple(command.name for command in COMMANDS)


def test_new_releases_the_old_session_file_for_other_writers(project: Path) -> None:
    state, _ = make_state(project, FakeModel())
    chat(state, "hello")
    with pytest.raises(SessionError):
        SessionStore.open(project / "s.jsonl", str(project), 0, hold=True)  # the live session holds it
    dispatch(state, "/new")
    SessionStore.open(project / "s.jsonl", str(project), 0, hold=True).close()


def test_summary_diff_shows_what_the_latest_compaction_changed(project: Path) -> None:
    model = FakeModel("a " * 300, "b " * 300, "c " * 300, "d " * 300, summary=structured_summary("ONE"))
    state, buffer = make_state(project, model)
    chat(state, "one " * 100, "two " * 100)
    dispatch(state, "/compact")
    buffer.truncate(0)
    dispatch(state, "/summary --diff")
    assert "compares the latest two compactions on this branch; it has 1." in squeeze(buffer)
    chat(state, "three " * 100, "four " * 100)
    model.summary = structured_summary("ONE").replace("- [ ] more", "- [ ] the lexer").replace(
        "- **keep it small**: scope", "- **keep it small**: scope\n- **use tabs**: house style")
    dispatch(state, "/compact")
    buffer.seek(0)
    buffer.truncate(0)
    dispatch(state, "/summary --diff")
    assert buffer.getvalue() == (
        "## Progress\n  + the lexer\n  - more\n## Key Decisions\n  + **use tabs**: house style\n"
    )


def test_context_says_where_the_window_came_from(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/context")
    assert "Window from litellm's model data" in squeeze(buffer)
