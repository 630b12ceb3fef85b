""""Nothing to compact" says why (the kept recent messages hold the whole conversation) and what would
compact it (``/compact --keep N``), and ``--keep`` does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, make_model_harness, padded, scripted_summary

from pi_compact.agent.events import CompactionEnd
from pi_compact.ui.commands.compaction import keep_option

KEEPS_ALL = replace(SETTINGS, compaction=replace(SETTINGS.compaction, keep_recent_tokens=6_144))


def test_nothing_to_compact_names_the_kept_window_and_the_keep_that_would_compact(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "first answer", "second answer", settings=KEEPS_ALL)
    h.session.prompt(padded("ONE", 600))
    h.session.prompt(padded("TWO", 600))
    assert h.session.compact() is None
    [end] = [e for e in h.events if isinstance(e, CompactionEnd)]
    assert end.skipped == "too_small" and end.error_message is not None
    assert end.error_message.startswith("Nothing to compact: the whole conversation (~1,2")
    assert "keepRecentTokens 6,144" in end.error_message
    assert end.error_message.endswith("To compact now, keep less: /compact --keep 600.")


def test_compact_with_a_smaller_keep_compacts_what_the_setting_keeps(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "first answer", "second answer", scripted_summary(), settings=KEEPS_ALL)
    h.session.prompt(padded("ONE", 600))
    h.session.prompt(padded("TWO", 600))
    result = h.session.compact(keep=600)
    assert result is not None
    assert h.session.messages[0]["role"] == "compactionSummary"
    assert "ONE" not in str(h.session.messages[1:]) and "TWO" in str(h.session.messages[1:])


def test_the_keep_option_is_read_before_the_instructions() -> None:
    assert keep_option("--keep 1000 focus on the parser") == (1000, "focus on the parser")
    assert keep_option("--keep 1000") == (1000, "")
    assert keep_option("focus on --keep") == (None, "focus on --keep")
    assert keep_option("--keep lots") == (0, "")


def test_one_message_larger_than_the_keep_is_not_said_to_fit_in_it() -> None:
    from pi_compact.agent.compaction.reasons import too_small_text

    text = too_small_text(7_093, 1_000)
    assert text.startswith("Nothing to compact: the conversation (~7,093 tokens) starts with a message that, with "
                           "its tool results, holds more than keepRecentTokens (1,000)")
    assert "--keep" not in text
    assert too_small_text(800, 1_000).startswith("Nothing to compact: the whole conversation (~800 tokens) fits")
