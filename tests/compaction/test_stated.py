"""The user's decisions with reasons, agreed next steps and settings are kept word for word (stated.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import (
    assistant,
    chain,
    compact_in_process,
    sized,
    structured_summary,
    user,
    write_session,
)
from fixtures_path import FIXTURES, needs_fixtures, parity_sessions

from pi_compact.compaction.stated import (
    add_missing_statements,
    settings_in,
    stated_decisions,
    stated_next_steps,
    stated_settings,
)
from pi_compact.compaction.user_ids import typed_text
from pi_compact.messages import Message

DECISION = "Let's deduplicate by offset instead of by payload hash, because two different events can share a payload."
NEXT = "After this, the next step we agreed is to add a property test for the window bounds."


def test_a_choice_with_its_reason_is_a_decision() -> None:
    assert stated_decisions([user(f"Reproduce it first. {DECISION}")]) == [DECISION]


def test_a_choice_without_a_reason_is_no_decision() -> None:
    assert stated_decisions([user("Let's deduplicate by offset instead of by payload hash.")]) == []


def test_a_reason_without_a_choice_is_no_decision() -> None:
    assert stated_decisions([user("The build broke because the cache was stale.")]) == []


def test_a_question_is_no_decision() -> None:
    assert stated_decisions([user("Should we go with Redis because it is faster?")]) == []


def test_a_decision_the_assistant_wrote_is_not_the_users() -> None:
    assert stated_decisions([assistant(DECISION)]) == []


def test_a_quoted_line_or_a_code_fence_states_no_decision() -> None:
    assert stated_decisions([user(f"> {DECISION}\n```\n{DECISION}\n```\nOk.")]) == []


def test_the_agreed_next_step_is_found_and_the_remark_about_now_is_not() -> None:
    assert stated_next_steps([user(f"Add logging around the tracker. {NEXT} Don't start it yet.")]) == [NEXT]


def test_only_the_newest_next_steps_are_kept() -> None:
    older = "After that, the next step is to profile the parser."
    newest = "As a follow-up we should write the migration notes."
    steps = stated_next_steps([user(older), user(NEXT), user(newest)])
    assert steps == [NEXT, newest]


def test_settings_are_found_in_their_usual_forms() -> None:
    text = "Also set MAX_BATCH_ROWS to 883; set `cache.size` to 10MB. Then retryLimit = 4 and TIMEOUT_MS: 2500."
    assert settings_in(text) == ["MAX_BATCH_ROWS = 883", "cache.size = 10MB", "retryLimit = 4", "TIMEOUT_MS = 2500"]


def test_a_plain_word_or_a_file_name_with_a_colon_is_no_setting() -> None:
    assert settings_in("Set the log level to debug. config.py: the timeout is wrong. retries = many") == []


def test_a_value_asked_about_in_a_question_is_no_setting() -> None:
    assert stated_settings([user("132   collapseChangelog = false, can't we read that from the settings?")]) == []


def test_a_later_value_of_a_setting_replaces_the_earlier_one() -> None:
    assert stated_settings([user("Set MAX_RETRIES to 3."), user("Actually set MAX_RETRIES to 5.")]) == [
        "MAX_RETRIES = 5"]


def test_settings_an_earlier_summary_listed_carry_on() -> None:
    previous = "## Critical Context\n- Settings the user asked for: POOL_SIZE = 12\n"
    assert stated_settings([user("Set MAX_RETRIES to 3.")], previous) == ["POOL_SIZE = 12", "MAX_RETRIES = 3"]


def test_what_the_summary_lacks_is_added_under_its_heading_word_for_word() -> None:
    summary, added = add_missing_statements(structured_summary("x"), [DECISION], [NEXT], ["MAX_BATCH_ROWS = 883"])
    assert f"- **keep it small**: scope\n- {DECISION}\n" in summary.split("## Key Decisions")[1]
    assert f"- {NEXT}" in summary.split("## Next Steps")[1].split("## Critical Context")[0]
    assert "- Settings the user asked for: MAX_BATCH_ROWS = 883" in summary.split("## Critical Context")[1]
    assert added == {"decisionsAdded": [DECISION], "nextStepsAdded": [NEXT], "settingsAdded": ["MAX_BATCH_ROWS = 883"]}


def test_what_the_summary_already_says_is_not_added_again() -> None:
    summary = structured_summary("x").replace(
        "## Next Steps", "- Deduplicate by offset, not payload hash: two different events can share a payload.\n\n"
        "## Next Steps\n- Add a property test for the window bounds (agreed next step)\n- MAX_BATCH_ROWS set to 883")
    assert add_missing_statements(summary, [DECISION], [NEXT], ["MAX_BATCH_ROWS = 883"]) == (summary, {})


def test_a_setting_named_without_its_value_is_added() -> None:
    summary = structured_summary("x") + "\n- MAX_BATCH_ROWS was raised\n"
    _, added = add_missing_statements(summary, [], [], ["MAX_BATCH_ROWS = 883"])
    assert added == {"settingsAdded": ["MAX_BATCH_ROWS = 883"]}


def _compacted(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user(f"Events arrive twice. Set MAX_BATCH_ROWS to 883. {DECISION}"),
        assistant("On it. " + sized(600)),
        user(f"Add logging. {NEXT}"),
        assistant("Logged. " + sized(600)),
        user("Good. " + sized(300)),
        assistant("Next. " + sized(300)),
    ))
    entry, model = compact_in_process(path, tmp_path, structured_summary("dedup"))
    assert len(model.history) == 1  # the additions asked the model nothing
    return dict(entry)


def test_a_compaction_keeps_the_decision_step_and_setting_its_summary_left_out(tmp_path: Path) -> None:
    entry = _compacted(tmp_path)
    summary = str(entry["summary"])
    assert f"- {DECISION}" in summary and f"- {NEXT}" in summary
    assert "- Settings the user asked for: MAX_BATCH_ROWS = 883" in summary
    gate = entry["details"]["qualityGate"]
    assert {"action": "decisionsAdded", "items": [DECISION]} in gate
    assert {"action": "nextStepsAdded", "items": [NEXT]} in gate
    assert {"action": "settingsAdded", "items": ["MAX_BATCH_ROWS = 883"]} in gate


# ---- over pi's own fixture sessions -----------------------------------------------------------------


def _fixture_messages() -> list[list[Message]]:
    sessions = []
    for session in [*parity_sessions(), *sorted(FIXTURES.glob("*.v3.jsonl"))]:
        lines = (json.loads(line).get("message") for line in session.read_text(encoding="utf-8").splitlines())
        sessions.append([m for m in lines if isinstance(m, dict)])
    return sessions


@needs_fixtures
def test_fixture_every_statement_added_is_a_sentence_the_user_typed() -> None:
    for messages in _fixture_messages():
        typed = "\n".join(typed_text(m) for m in messages)
        _, added = add_missing_statements(structured_summary("x"), stated_decisions(messages, 50),
                                          stated_next_steps(messages, 50), [])
        assert [s for kind in added.values() for s in kind if s not in typed] == []


@needs_fixtures
def test_fixture_no_statement_comes_from_assistant_text_or_tool_output() -> None:
    for messages in _fixture_messages():
        others = [m for m in messages if m.get("role") != "user"]
        assert (stated_decisions(others), stated_next_steps(others), stated_settings(others)) == ([], [], [])


@needs_fixtures
def test_fixture_users_code_and_questions_state_no_setting() -> None:
    # pi's own sessions: the users paste code and ask about values, and never ask for a setting.
    assert [stated_settings(messages) for messages in _fixture_messages() if stated_settings(messages)] == []
