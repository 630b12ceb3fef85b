"""Issue 35 §8: settings warnings that say what applies.

A reserve that leaves no room under the threshold for what every request carries is fitted with a
warning (not accepted silently); ``/settings reload`` reports the warnings the start reported; after a
settings file is edited, ``/settings`` says its values are the ones read before and that a reload
applies the file (and that a reload would ignore a file the edit broke); a file ignored as broken is
marked so in the list of files.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_harness import make_model_harness
from ui_harness import FakeModel, make_state, squeeze

from pi_compact.compaction.threshold import fit_to_window
from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, Settings
from pi_compact.ui.commands import dispatch

LOCAL = ModelInfo("local", "local", 16_384, 1_024)


def test_a_reserve_leaving_less_than_the_system_prompt_and_tools_is_fitted_with_a_warning() -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=16_000))
    fitted, warnings = fit_to_window(settings, 16_384, model="local", fixed_tokens=1_750,
                                     sources={"compaction.reserveTokens": "/p/.pi/settings.json"})
    assert fitted.compaction.reserve_tokens == 4_096  # threshold 12,288
    assert warnings[0] == (
        "compaction.reserveTokens (16000) in /p/.pi/settings.json leaves an auto-compaction threshold of 384 tokens "
        "on the 16384-token context window of local, less than the ~1,750 tokens every request carries (system "
        "prompt and tools) plus room for the conversation, so auto-compaction would run before every turn; using "
        "4096 instead.")


def test_a_reserve_that_leaves_room_for_the_conversation_is_kept() -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=8_000, keep_recent_tokens=2_000))
    assert fit_to_window(settings, 16_384, fixed_tokens=1_750) == (settings, [])


def test_the_session_fits_such_a_reserve_so_the_threshold_is_above_what_every_request_carries(tmp_path: Path) -> None:
    settings = Settings(compaction=CompactionSettings(reserve_tokens=16_000, keep_recent_tokens=2_000))
    h = make_model_harness(tmp_path, settings=settings, info=LOCAL)
    usage = h.session.context_usage()
    assert usage.threshold == 16_384 - 4_096
    assert usage.threshold > h.session.fixed_tokens()


def _write(project: Path, settings: object) -> None:
    (project / ".pi" / "settings.json").write_text(settings if isinstance(settings, str) else json.dumps(settings))


def test_settings_reload_reports_the_window_warnings_the_start_reported(project: Path) -> None:
    _write(project, {"compaction": {"reserveTokens": 7_900, "keepRecentTokens": 50}})
    state, buffer = make_state(project, FakeModel(window=8_000))
    dispatch(state, "/settings reload")
    out = squeeze(buffer)
    assert "warning: compaction.reserveTokens (7900) in" in out and "using 2000 instead." in out
    assert "Settings reloaded (1 warning)." in out


def test_settings_says_a_file_edited_since_it_was_read_needs_a_reload(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/settings")
    assert "changed since the settings were read" not in squeeze(buffer)
    _write(project, {"compaction": {"reserveTokens": 1_500, "keepRecentTokens": 60, "enabled": True}})
    dispatch(state, "/settings")
    out = squeeze(buffer)
    assert "settings.json changed since the settings were read: the values above are the ones read then; " \
           "/settings reload applies the file as it is now." in out
    dispatch(state, "/settings reload")
    buffer.truncate(0)
    buffer.seek(0)
    dispatch(state, "/settings")
    assert "changed since" not in squeeze(buffer)


def test_settings_says_a_reload_would_ignore_a_file_the_edit_broke(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    _write(project, '{"compaction": {"reserveTokens": 1000,}}')
    dispatch(state, "/settings")
    assert "A reload would ignore " in squeeze(buffer) and "invalid JSON at line 1" in squeeze(buffer)


def test_settings_marks_a_broken_file_as_ignored(project: Path) -> None:
    _write(project, '{"compaction": {"reserveTokens": 1000,}}')
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/settings")
    out = squeeze(buffer)
    assert "settings.json (ignored: see the warning when it was read);" in out
