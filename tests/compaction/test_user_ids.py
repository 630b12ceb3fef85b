"""Ids the user typed, put back into a summary that left them out (``compaction.user_ids``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from builders import assistant, structured_summary, tool_result, user
from fixtures_path import FIXTURES, needs_fixtures, parity_sessions

from pi_compact.compaction.user_ids import add_missing_ids, ids_in, listed_ids, typed_text, user_ids
from pi_compact.messages import Message


def test_ticket_like_ids_are_found() -> None:
    assert ids_in("Fix ABC-123 and GH-77, then CVE-2021-44228.") == ["ABC-123", "GH-77", "CVE-2021-44228"]


def test_an_issue_number_with_a_hash_is_found_but_not_a_single_digit_step() -> None:
    assert ids_in("See #4521; that was step #1.") == ["#4521"]


def test_encoding_and_standard_names_are_no_tickets() -> None:
    assert ids_in("Keep UTF-8 and SHA-256 and ISO-8601 dates.") == []


def test_versions_with_and_without_v_are_found() -> None:
    assert ids_in("Ship v2.3.1 after 1.14.0 and v1.2.3-rc1; v2.4 next.") == ["v2.3.1", "1.14.0", "v1.2.3-rc1", "v2.4"]


def test_a_decimal_number_is_no_version() -> None:
    assert ids_in("It took 3.14 seconds, 2.5 times slower.") == []


def test_a_time_in_a_file_name_is_no_version() -> None:
    assert ids_in("Look at 'Screenshot 2025-11-21 at 01.27.21.png' and build-1.2.3.tar") == []


def test_a_six_digit_colour_is_no_issue_number() -> None:
    assert ids_in("red diff #283228, accent #8abeb7") == []


def test_a_version_at_a_sentence_end_keeps_no_full_stop() -> None:
    assert ids_in("Pin it to 2.0.0-beta.2.") == ["2.0.0-beta.2"]


def test_hostnames_under_known_suffixes_are_found() -> None:
    assert ids_in("Point it at db-2.internal and https://api.example.com/v1.") == ["db-2.internal", "api.example.com"]


def test_file_names_and_email_domains_are_no_hostnames() -> None:
    assert ids_in("Edit config.py and README.md, then mail ops@corp.example.com.") == []


def test_an_ip_address_is_found_whole() -> None:
    assert ids_in("The replica is 10.0.3.17 now.") == ["10.0.3.17"]


def test_environment_names_count_only_when_written_as_an_id() -> None:
    text = "Deploy to `staging`, with env=prod-eu and --env qa. The production team agrees."
    assert ids_in(text) == ["staging", "prod-eu", "qa"]


def test_a_backticked_script_name_is_no_environment() -> None:
    assert ids_in("Run `test` and `dev`, then deploy to `dev-eu`.") == ["dev-eu"]


def test_only_the_users_typed_text_counts() -> None:
    assert typed_text(assistant("Ticket ABC-1")) == ""
    assert typed_text(tool_result("host db-1.internal")) == ""


def test_code_fences_and_quoted_lines_are_not_typed() -> None:
    message = user("Fix it.\n```\nERR-500 at 1.2.3\n```\n> Reported on PAY-9\nTicket OPS-7.")
    assert ids_in(typed_text(message)) == ["OPS-7"]


def test_user_ids_keeps_the_newest_distinct_ones_in_typed_order() -> None:
    messages = [user(f"Ticket TK-{n}.") for n in range(12)] + [user("Back to TK-0.")]
    assert user_ids(messages, limit=3) == ["TK-10", "TK-11", "TK-0"]


def test_ids_an_earlier_summary_listed_carry_on() -> None:
    previous = structured_summary("x") + "\n- Ids named by the user: OPS-1, v1.0.0"
    assert listed_ids(previous) == ["OPS-1", "v1.0.0"]
    assert user_ids([user("Now OPS-2.")], previous) == ["OPS-1", "v1.0.0", "OPS-2"]


def test_an_id_the_summary_names_is_not_added_again() -> None:
    summary = structured_summary("x").replace("## Critical Context\n", "## Critical Context\n- ticket abc-123, 4521\n")
    assert add_missing_ids(summary, ["ABC-123", "#4521"]) == (summary, [])


def test_missing_ids_go_on_one_line_under_critical_context() -> None:
    added, ids = add_missing_ids(structured_summary("x"), ["OPS-5039", "v2.3.1"])
    assert ids == ["OPS-5039", "v2.3.1"]
    assert added.endswith("## Critical Context\n- Ids named by the user: OPS-5039, v2.3.1")


# ---- over pi's own fixture sessions -----------------------------------------------------------------


def _fixture_messages() -> Iterator[list[Message]]:
    for session in [*parity_sessions(), *sorted(FIXTURES.glob("*.v3.jsonl"))]:
        messages: list[Message] = []
        for line in session.read_text(encoding="utf-8").splitlines():
            message: Any = json.loads(line).get("message")
            if isinstance(message, dict):
                messages.append(message)
        yield messages


@needs_fixtures
def test_fixture_every_id_added_was_typed_by_the_user_word_for_word() -> None:
    added_total = 0
    for messages in _fixture_messages():
        typed = [typed_text(m) for m in messages if m.get("role") == "user"]
        _, added = add_missing_ids(structured_summary("x"), user_ids(messages))
        added_total += len(added)
        assert [value for value in added if not any(value in text for text in typed)] == []
    assert added_total > 0  # the fixtures' users do type ids


@needs_fixtures
def test_fixture_ids_never_come_from_assistant_text_or_tool_output() -> None:
    for messages in _fixture_messages():
        others = [m for m in messages if m.get("role") != "user"]
        assert user_ids(others) == []


def test_a_compaction_adds_the_ticket_its_summary_left_out_and_records_it(tmp_path: Path) -> None:
    from test_added_names import compact_session

    entry = compact_session(tmp_path)
    assert "- Ids named by the user: PAY-4521, v2.3.1" in str(entry["summary"])
    assert {"action": "idsAdded", "ids": ["PAY-4521", "v2.3.1"]} in entry["details"]["qualityGate"]
