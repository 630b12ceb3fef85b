"""The summary quality gate: structure, carry-forward, no inflation, and ``/summary --diff``'s diff.

Unit tests of ``compaction.quality`` (pure), pipeline tests on ``Compactor`` with the in-process
``ScriptedModel``, and acceptance tests through the real litellm path against the scripted server.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from builders import (
    assistant,
    chain,
    compaction,
    compaction_settings,
    run_compaction,
    sized,
    summary_text,
    user,
    write_session,
)
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.compaction.pipeline import Compactor
from pi_compact.agent.events import CompactionEnd, SessionEvent
from pi_compact.compaction.gated import gated_summary
from pi_compact.compaction.kept import without_blocks
from pi_compact.compaction.kept.blocks import block_lines
from pi_compact.compaction.prompts import history_request_text
from pi_compact.compaction.quality import (
    CARRIED_MARK,
    SHORT_SUMMARY_TOKENS,
    clear_placeholders,
    fill_sections,
    format_diff,
    gate_problems,
    merge_back,
    missing_items,
    placeholder_sections,
    summary_diff,
)
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedModel
from pi_compact.session.store import SessionStore


def summary_with(constraints: list[str], decisions: list[str], goal: str = "Ship the parser") -> str:
    def bullets(items: list[str]) -> str:
        return "\n".join(f"- {i}" for i in items) or "- (none)"

    return summary_text({
        "## Goal": goal, "## Constraints & Preferences": bullets(constraints),
        "## Progress": "### Done\n- [x] wrote the lexer\n\n### In Progress\n- [ ] parser\n\n### Blocked\n- (none)",
        "## Key Decisions": bullets(decisions), "## Next Steps": "1. finish the parser",
    })


PREVIOUS = summary_with(["Never change the public API", "Use tabs, not spaces"], ["**Hand-written lexer**: speed"])
DROPS_CONSTRAINT = summary_with(["Use tabs, not spaces"], ["**Hand-written lexer**: speed"], goal="Ship v2")
KEEPS_ALL = summary_with(["never change the public API!", "Use tabs, not spaces"],
                         ["**Hand-written lexer**: speed"], goal="Ship v2")
PLACEHOLDER = KEEPS_ALL.replace("1. finish the parser", "1. [What was agreed to do next]")
INFO = ModelInfo("test/model", "test", 100_000, None)


# ---- pure checks ---------------------------------------------------------------------------------


def test_missing_items_compares_normalised_text() -> None:
    assert missing_items(PREVIOUS, KEEPS_ALL) == {}
    expected = {"## Constraints & Preferences": ["Never change the public API"]}
    assert missing_items(PREVIOUS, DROPS_CONSTRAINT) == expected


def test_item_marked_obsolete_counts_as_carried() -> None:
    marked = DROPS_CONSTRAINT.replace(
        "- Use tabs", "- Never change the public API (obsolete: v2 may break it)\n- Use tabs")
    assert missing_items(PREVIOUS, marked) == {}


def test_placeholder_and_empty_sections_are_found() -> None:
    assert placeholder_sections(KEEPS_ALL) == []
    assert placeholder_sections(PLACEHOLDER) == ["## Next Steps"]
    assert placeholder_sections(KEEPS_ALL.replace("Ship v2", "")) == ["## Goal"]


def test_merge_back_puts_items_under_their_section_marked_and_drops_none() -> None:
    summary = summary_with([], ["**Hand-written lexer**: speed"])
    merged = merge_back(summary, {"## Constraints & Preferences": ["Never change the public API"]})
    assert f"## Constraints & Preferences\n- Never change the public API {CARRIED_MARK}\n\n## Progress" in merged


def test_summary_diff_lists_added_changed_and_dropped_items() -> None:
    latest = summary_with(["Never change the public API", "Run ruff before committing"],
                          ["**Hand-written lexer**: for speed"])
    diffs = {d.heading: d for d in summary_diff(PREVIOUS, latest)}
    constraints = diffs["## Constraints & Preferences"]
    assert constraints.added == ("Run ruff before committing",)
    assert constraints.dropped == ("Use tabs, not spaces",)
    changed = (("**Hand-written lexer**: speed", "**Hand-written lexer**: for speed"),)
    assert diffs["## Key Decisions"].changed == changed
    text = format_diff(summary_diff(PREVIOUS, latest))
    assert "  + Run ruff before committing" in text and "  - Use tabs, not spaces" in text
    assert format_diff(summary_diff(PREVIOUS, PREVIOUS)) == "No differences in the summary's items."


def test_lines_that_only_repeat_a_template_placeholder_say_none() -> None:
    summary = KEEPS_ALL.replace("## Critical Context\n- (none)", "## Critical Context\n- [Each rule the user set "
                                "for the work, or \"(none)\"]").replace(
        "### Blocked\n- (none)", "### Blocked\n- [None]")
    cleared = clear_placeholders(summary)
    assert cleared.endswith("## Critical Context\n- (none)") and "### Blocked\n- (none)\n" in cleared
    # Real items are kept, brackets in them or not, and checkboxes too.
    assert "- [x] wrote the lexer" in cleared and "- **Hand-written lexer**: speed" in cleared
    assert clear_placeholders(KEEPS_ALL) == KEEPS_ALL
    assert clear_placeholders("- see [the docs] here\n") == "- see [the docs] here\n"
    # Key Decisions' template line is two placeholders joined by "because"; a Critical Context line keeps its label.
    assert clear_placeholders("- Ids: [tickets, versions, hosts]\n") == "- Ids: (none)\n"
    assert clear_placeholders("- [What was decided] because [why]\n") == "- (none)\n"


def test_a_placeholder_copied_without_its_brackets_says_none() -> None:
    # The embedded model's answer in the issue-44 walk: the format's instruction as a value, on its own line.
    copied = "- Values set:\n  - NAME = VALUE, the newest value only\n"
    assert clear_placeholders(copied) == "- Values set:\n  - (none)\n"
    assert clear_placeholders("- Values set: NAME = VALUE, the newest value only\n") == "- Values set: (none)\n"
    assert clear_placeholders("- Values set: RETRIES = 5\n") == "- Values set: RETRIES = 5\n"


# ---- the pipeline (in-process model) -------------------------------------------------------------


def _written(tmp_path: Path, *items: dict[str, Any]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "s.jsonl"
    write_session(path, chain(*items))
    return path


def _session(tmp_path: Path, previous: bool = True) -> Path:
    """A session with history to summarize and a kept tail (keep 400); by default it was compacted before
    (``PREVIOUS``), which the update path merges into the new summary by code (``compaction.merge``)."""
    before = [user("first"), assistant("ok"), compaction(PREVIOUS, "test-id-3", 4000)] if previous else []
    return _written(
        tmp_path, *before, user("second " + sized(600)), assistant("done " + sized(600)),
        user("third " + sized(300)), assistant("fine " + sized(300)),
    )


def _gated(previous: str | None, *answers: str) -> tuple[str, list[dict[str, Any]], list[str]]:
    """``gated_summary`` of a small chunk updating ``previous`` (the way each chunk of a history too long
    for one request updates the summary of the chunks before it): the summary, the gate's records, and
    the text of every request it made."""
    chunk = "[User]: second\n\n[Assistant]: done"
    asked: list[str] = []
    replies = iter(answers)

    def ask(strict: bool, problems: Sequence[str]) -> str:
        asked.append(history_request_text(chunk, previous, None, strict=strict, problems=problems))
        return next(replies)

    gate: list[dict[str, Any]] = []
    return gated_summary(chunk, previous, ask, replaced=100_000, gate=gate), gate, asked


def _compact(path: Path, *replies: str | Reply) -> tuple[ScriptedModel, list[SessionEvent], SessionStore]:
    store = SessionStore.open(path, str(path.parent), 0)
    model = ScriptedModel(INFO, *(r if isinstance(r, str) else r.text for r in replies))
    events: list[SessionEvent] = []
    Compactor(store, model, compaction_settings(keep=400), events.append).run("manual")
    return model, events, store


def _latest_compaction(store: SessionStore) -> dict[str, object]:
    return [e for e in store.branch() if e.get("type") == "compaction"][-1]


def test_a_chunk_summary_that_drops_a_constraint_of_the_running_summary_is_retried_naming_it() -> None:
    summary, gate, asked = _gated(PREVIOUS, DROPS_CONSTRAINT, KEEPS_ALL)
    assert len(asked) == 2 and 'dropped "Never change the public API"' in asked[1]
    assert summary == KEEPS_ALL and gate == [{"action": "retried", "passed": True}]


def test_a_second_compaction_keeps_a_previous_constraint_its_answer_lacks_without_asking_again(
        tmp_path: Path) -> None:
    # The new messages are asked about alone, so an answer without the previous rules is what was asked for.
    model, _, store = _compact(_session(tmp_path), DROPS_CONSTRAINT, KEEPS_ALL)
    assert len(model.history) == 1
    entry = _latest_compaction(store)
    assert "- Never change the public API" in without_blocks(str(entry["summary"]))
    assert entry["details"]["qualityGate"] == [{"action": "mergedWithPrevious"}]  # type: ignore[index]


def test_a_committed_summary_carries_no_echoed_placeholder(tmp_path: Path) -> None:
    # The format's own instruction, echoed (a note of the model's own in brackets is content: see below).
    echoed = KEEPS_ALL.replace("## Critical Context\n- (none)",
                               "## Critical Context\n- [what was found to cause a problem]")
    _, _, store = _compact(_session(tmp_path), echoed)
    summary = str(_latest_compaction(store)["summary"])
    assert "## Critical Context\n- (none)" in summary and "[what was found" not in summary


def _rule_session(tmp_path: Path) -> Path:
    """A first compaction of history in which the user stated a rule (keep 400)."""
    return _written(
        tmp_path, user("Port the lexer. Never touch the generated tables. " + sized(600)),
        assistant("ok " + sized(600)), user("third " + sized(300)), assistant("fine " + sized(300)),
    )


NO_CONSTRAINTS = summary_with([], ["**Hand-written lexer**: speed"])


def test_no_constraints_when_the_user_stated_a_rule_keeps_the_rule_in_the_users_words_without_a_retry(
    tmp_path: Path,
) -> None:
    # Before issue 41 a rule-shaped sentence was picked out and written under Constraints; now the code
    # writes nothing into the model's sections: the user's message, rule and all, is kept after them.
    model, _, store = _compact(_rule_session(tmp_path), NO_CONSTRAINTS)
    assert len(model.history) == 1  # no second request
    entry = _latest_compaction(store)
    assert without_blocks(str(entry["summary"])) == NO_CONSTRAINTS
    (message,) = block_lines(str(entry["summary"]), "user-messages") or []
    assert message.startswith('"Port the lexer. Never touch the generated tables. ')
    assert "qualityGate" not in entry["details"]  # type: ignore[operator]


def test_a_rule_the_summary_lists_in_its_own_words_is_not_added_again(tmp_path: Path) -> None:
    kept = summary_with(["Do not touch the generated tables"], ["**Hand-written lexer**: speed"])
    model, _, store = _compact(_rule_session(tmp_path), kept)
    assert len(model.history) == 1
    entry = _latest_compaction(store)
    assert without_blocks(str(entry["summary"])) == kept
    assert "qualityGate" not in entry["details"]  # type: ignore[operator]


def test_constraint_dropped_twice_is_merged_back_and_recorded() -> None:
    summary, gate, asked = _gated(PREVIOUS, DROPS_CONSTRAINT, DROPS_CONSTRAINT)
    assert len(asked) == 2
    assert f"- Never change the public API {CARRIED_MARK}" in summary
    assert gate == [
        {"action": "carriedForward", "items": {"## Constraints & Preferences": ["Never change the public API"]}}
    ]


def test_a_section_left_as_placeholders_twice_is_built_from_the_history_and_the_rest_kept(tmp_path: Path) -> None:
    model, _, store = _compact(_session(tmp_path, previous=False), PLACEHOLDER, PLACEHOLDER)
    assert len(model.history) == 2
    entry = _latest_compaction(store)
    summary = str(entry["summary"])
    assert entry["details"].get("fallback") is None  # type: ignore[attr-defined]
    assert entry["details"]["qualityGate"] == [  # type: ignore[index]
        {"action": "filledWithoutModel", "sections": ["## Next Steps"]},
        {"action": "retried", "passed": True},
    ]
    # The model's sections stay; Next Steps points to the last user message of the summarized history, which
    # is the first of <user-messages> (issue 41: it is kept there word for word, not copied a second time).
    assert "## Goal\nShip v2" in summary and "**Hand-written lexer**: speed" in summary
    assert "## Next Steps\n1. Carry on with the user's newest request" in summary
    assert "[What was agreed" not in summary
    assert (block_lines(summary, "user-messages") or [""])[0].startswith('"second ')


def test_placeholders_twice_and_another_fault_still_fall_back_to_the_model_free_summary(tmp_path: Path) -> None:
    broken = PLACEHOLDER + "\n- padding " + sized(2000)  # also longer than what it replaces
    _, _, store = _compact(_session(tmp_path), broken, broken)
    entry = _latest_compaction(store)
    assert entry["details"]["fallback"] is True  # type: ignore[index]
    assert "[What should happen next" not in str(entry["summary"])
    assert "Never change the public API" in str(entry["summary"])  # the fallback keeps the previous summary


def test_fill_sections_replaces_only_the_sections_left_as_placeholders() -> None:
    filled, headings = fill_sections(PLACEHOLDER, {"## Next Steps": "1. run the tests", "## Goal": "other goal"})
    assert headings == ["## Next Steps"]
    assert filled == KEEPS_ALL.replace("1. finish the parser", "1. run the tests") + "\n"


def test_manual_compaction_that_gains_nothing_writes_nothing_and_says_why(tmp_path: Path) -> None:
    # 244 -> ~318 tokens in the issue: a short history whose summary is bigger than itself.
    path = tmp_path / "short.jsonl"
    write_session(path, chain(user("hi"), assistant("hello"), user("more " + sized(500)), assistant("ok")))
    before = path.read_bytes()
    model, events, _ = _compact(path, KEEPS_ALL, KEEPS_ALL)
    ends = [e for e in events if isinstance(e, CompactionEnd)]
    assert path.read_bytes() == before
    assert len(ends) == 1 and ends[0].result is None and ends[0].skipped == "no_gain"
    assert ends[0].error_message is not None and ends[0].error_message.startswith("Nothing gained:")
    # A short summary of so little history is not "too long": asking again cannot help (issue 25 §6).
    assert len(model.history) == 1


def test_a_long_summary_of_a_tiny_history_is_asked_once_more_and_never_falls_back(tmp_path: Path) -> None:
    # The history (~410 tokens) is tiny: the first answer is long (> SHORT_SUMMARY_TOKENS), so a shorter
    # one is asked for; the retry is still not smaller, yet the model answered: no model-free summary
    # (which would clip the long request and be smaller) is written in its place; nothing is written.
    path = _written(tmp_path, user("Fix the typo in README.md. " + sized(400)), assistant("Fixed."),
                    user("Thanks."), assistant("ok"), user("third " + sized(200)), assistant("fine " + sized(200)))
    before = path.read_bytes()
    long = KEEPS_ALL + "\n- padding " + sized(SHORT_SUMMARY_TOKENS)
    model, events, _ = _compact(path, long, long)
    retry = str(model.history[1].messages[0]["content"][0]["text"])
    assert len(model.history) == 2 and "not smaller than the" in retry
    (end,) = [e for e in events if isinstance(e, CompactionEnd)]
    assert end.skipped == "no_gain" and end.result is None and path.read_bytes() == before


def test_the_gate_calls_a_short_summary_of_a_tiny_history_no_size_problem() -> None:
    assert gate_problems(KEEPS_ALL, None, 40, SHORT_SUMMARY_TOKENS) == []
    assert gate_problems(KEEPS_ALL, None, 40, SHORT_SUMMARY_TOKENS + 1) == [
        f"it is about {SHORT_SUMMARY_TOKENS + 1} tokens, not smaller than the 40 tokens it replaces"]


# ---- acceptance: the real litellm path -----------------------------------------------------------


def test_acceptance_no_bad_summary_is_committed(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    cases = {
        "drops a constraint": [DROPS_CONSTRAINT],  # the previous summary's are merged in by code
        "drops a section": [KEEPS_ALL.replace("## Key Decisions\n", "")] * 2,
        "longer than its input": [KEEPS_ALL + "\n- padding " + sized(2000)] * 2,
    }
    for name, replies in cases.items():
        path = _session(tmp_path / name.replace(" ", "-"))
        scripted_server.enqueue(*(Reply(text=r) for r in replies))
        result = run_compaction(path, scripted_server.base_url, settings=compaction_settings(keep=400))
        assert result is not None, name
        assert result.summary not in replies, name
        assert "Never change the public API" in result.summary, name
        assert "Hand-written lexer" in result.summary, name
    assert scripted_server.pending == 0


def test_a_small_models_own_notes_in_brackets_are_content_not_placeholders() -> None:
    from pi_compact.compaction.quality import clear_placeholders, is_placeholder, placeholder_sections

    # Seen on the embedded 1.5B model: every Progress and Next Steps item wrapped in brackets, which made
    # the gate ask again for a summary that had them.
    summary = ("## Goal\nRefactor the quotas.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n"
               "- [x] [Refactor tenant quotas]\n\n### In Progress\n- [ ] [Started, not finished]\n\n"
               "### Blocked\n- (none)\n\n## Key Decisions\n- (none)\n\n## Next Steps\n1. [Add a fuzz test for the "
               "parser]\n\n## Critical Context\n- (none)")
    assert placeholder_sections(summary) == []
    assert not is_placeholder("[Refactor tenant quotas]") and is_placeholder("[Started, not finished]")
    cleared = clear_placeholders(summary)
    assert "- [x] Refactor tenant quotas" in cleared and "1. Add a fuzz test for the parser" in cleared
    assert "Started, not finished" not in cleared


def test_the_formats_own_instructions_in_brackets_are_still_placeholders() -> None:
    from pi_compact.compaction.quality import placeholder_sections

    echoed = ("## Goal\n[One line: what the session is working towards]\n\n## Constraints & Preferences\n- (none)\n\n"
              "## Progress\n### Done\n- [x] shipped it\n\n## Key Decisions\n- (none)\n\n## Next Steps\n1. more\n\n"
              "## Critical Context\n- (none)")
    assert placeholder_sections(echoed) == ["## Goal"]


def test_a_summary_that_stopped_before_its_last_heading_is_completed_not_asked_again(tmp_path: Path) -> None:
    from pi_compact.compaction.quality import completed_tail

    # Seen on the 1.5B model (go-leasekeeper): a good answer without "## Critical Context"; the strict
    # retry it caused was worse. The missing last heading is added with "(none)" and no second request.
    stopped = KEEPS_ALL.split("## Critical Context")[0].rstrip()
    assert completed_tail(stopped).endswith("## Critical Context\n- (none)")
    model, _, store = _compact(_session(tmp_path, previous=False), stopped, KEEPS_ALL.replace("Ship", "NOT-ASKED"))
    assert len(model.history) == 1
    assert str(_latest_compaction(store)["summary"]).startswith(stopped + "\n\n## Critical Context\n- (none)")


def test_headings_missing_in_the_middle_still_get_the_strict_retry() -> None:
    from pi_compact.compaction.quality import completed_tail

    middle = KEEPS_ALL.replace("## Key Decisions", "## Decisions")
    assert completed_tail(middle) == middle
