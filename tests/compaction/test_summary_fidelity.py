"""What a summary keeps: exact values in the prompt, a quality gate that can only improve, and a short
split-turn prefix kept word for word instead of a fallback (issue 23).

Pure checks of ``compaction.quality`` and ``compaction.prompts``; runs of ``summarize`` and of the
``Compactor`` with the in-process ``ScriptedModel``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from builders import assistant, chain, compaction, compaction_settings, sized, summary_text, user, write_session

from pi_compact.agent.compaction.pipeline import Compactor
from pi_compact.agent.events import SessionEvent
from pi_compact.compaction.gated import gated_summary
from pi_compact.compaction.kept import without_blocks
from pi_compact.compaction.kept.blocks import block_lines
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.compaction.prompts import (
    HISTORY_HEADINGS,
    INITIAL_PROMPT,
    REJECTED_INTRO,
    STRICT_REMINDER,
    UPDATE_PROMPT,
    history_request_text,
)
from pi_compact.compaction.quality import CARRIED_MARK, exact_items, lost_items
from pi_compact.compaction.summarize import (
    SPLIT_TURN_SEPARATOR,
    VERBATIM_PREFIX_INTRO,
    SummaryBudget,
    summarize,
)
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.scripted import ScriptedModel
from pi_compact.session.store import SessionStore

INFO = ModelInfo("test/model", "test", 100_000, None)
RULE = "Never retry a refund twice"


def summary(constraints: str = "- (none)", context: str = "- burst is 48, window 750 ms; use `--dry-rotate`",
            decisions: str = "- **Token bucket**: refillTokensLocked keeps it lock-free") -> str:
    return summary_text({
        "## Goal": "Rate-limit the gateway (PAY-1234)", "## Constraints & Preferences": constraints,
        "## Progress": "### Done\n- [x] wrote src/limiter/bucket.py\n\n### In Progress\n- [ ] tests\n\n"
        "### Blocked\n- (none)",
        "## Key Decisions": decisions, "## Next Steps": "1. add the tests", "## Critical Context": context,
    })


def _path(tmp_path: Path, previous: str | None = None) -> Path:
    """The user states ``RULE`` (and a plan); with ``previous`` the history follows a compaction whose
    summary it is."""
    path = tmp_path / "s.jsonl"
    before = [user("first"), assistant("ok"), compaction(previous, "test-id-3", 4000)] if previous else []
    write_session(path, chain(
        *before,
        user(f"Build the limiter. {RULE}. Don't start the docs yet, just note it. " + sized(600)),
        assistant("ok " + sized(600)), user("third " + sized(300)), assistant("fine " + sized(300)),
    ))
    return path


# A previous summary that lists ``RULE``: a first answer listing none dropped it, and is asked for again.
RULED = summary(f"- {RULE}")


def _compact(path: Path, *replies: str) -> tuple[ScriptedModel, dict[str, Any]]:
    store = SessionStore.open(path, str(path.parent), 0)
    model = ScriptedModel(INFO, *replies)
    events: list[SessionEvent] = []
    Compactor(store, model, compaction_settings(keep=400), events.append).run("manual")
    entry = [e for e in store.branch() if e.get("type") == "compaction"][-1]
    return model, entry


def _request_text(model: ScriptedModel, index: int) -> str:
    return str(model.history[index].messages[0]["content"][0]["text"])


# ---- 1. the prompt -----------------------------------------------------------------------------


def test_history_prompts_ask_for_exact_values_verbatim_under_pis_headings() -> None:
    for prompt in (INITIAL_PROMPT, UPDATE_PROMPT):
        assert "character for character" in prompt
        for kind in ("functions", "numbers", "file paths", "error lines in quotes", "rules in the user's words",
                     "A decision and its reason", "only the newest one", "root cause", "renamed"):
            assert kind in prompt, kind
        positions = [prompt.index(heading) for heading in HISTORY_HEADINGS]
        assert positions == sorted(positions)
    assert "previous-summary" in UPDATE_PROMPT


def test_the_prompt_asks_for_short_notes_with_exact_values_inside_not_pasted_messages() -> None:
    """The 1.5B model read "copy exact values" as "quote the user": its Goal, Done and Key Decisions were the
    user's requests word for word. The notes are the summarizer's own; only the user's rules are copied whole."""
    model = ScriptedModel(INFO, summary())
    plan = prepare_compaction(chain(user("Build the limiter. " + sized(600)), assistant("ok " + sized(600)),
                                    user("third " + sized(300)), assistant("fine " + sized(300))),
                              compaction_settings(keep=400).compaction)
    assert plan is not None
    summarize(plan, model, SummaryBudget.for_model(100_000, None, 1000))
    asked = _request_text(model, 0)
    assert "Write short notes in your own words; do not paste whole messages" in asked
    assert "Copy the user's rules in the user's words" in asked
    assert "Copy every value character for character" in asked
    assert "- Exact errors: [\"each error line, quoted from the failed tool result\"]" in asked
    assert "**[Decision]**" not in asked


# ---- 2. the gate: items, rules, and a retry that can only improve ---------------------------------


def test_exact_items_are_identifiers_numbers_paths_flags_quotes_and_backticks() -> None:
    text = ('- Set burst to 48 in src/limiter/bucket.py for PAY-1234; call refillTokensLocked via `make rotate`,\n'
            '- flag --dry-rotate, error "ValueError: rate must be positive", max_retries at 1,500, NEEDLE-3.\n'
            '1. a well-known follow-up, e.g. later')
    assert exact_items(text) == ["48", "src/limiter/bucket.py", "PAY-1234", "refillTokensLocked", "make rotate",
                                 "--dry-rotate", "ValueError: rate must be positive", "max_retries", "1,500",
                                 "NEEDLE-3"]


def test_lost_items_compare_whole_tokens_ignoring_case() -> None:
    first = "burst 48, NEEDLE-3, refillTokensLocked"
    assert lost_items(first, "burst 480, needle-3, refillTokensLockedX") == ["48", "refillTokensLocked"]
    assert lost_items(first, "48 ms; refilltokenslocked and NEEDLE-3.") == []


def test_a_stated_rule_the_summary_lacks_is_kept_in_the_users_message_without_a_retry(tmp_path: Path) -> None:
    # Before issue 41 the rule sentence was picked out by its wording and appended under Constraints; the
    # sections are now the model's alone, and the user's whole message is kept after them.
    model, entry = _compact(_path(tmp_path), summary())
    assert len(model.history) == 1
    assert without_blocks(str(entry["summary"])) == summary()
    (message,) = block_lines(str(entry["summary"]), "user-messages") or []
    assert message.startswith(f'"Build the limiter. {RULE}. Don\'t start the docs yet, just note it. ')
    assert "qualityGate" not in entry["details"]  # type: ignore[operator]


def _gated(*answers: str) -> tuple[str, list[dict[str, Any]], list[str]]:
    """``gated_summary`` of a chunk in which the user states ``RULE`` (and a plan), updating ``RULED`` (the
    running summary a history too long for one request carries from chunk to chunk): the summary, the
    gate's records, and every request's text."""
    chunk = f"[User]: Build the limiter. {RULE}. Don't start the docs yet, just note it.\n\n[Assistant]: ok"
    asked: list[str] = []
    replies = iter(answers)

    def ask(strict: bool, problems: Sequence[str]) -> str:
        asked.append(history_request_text(chunk, RULED, None, strict=strict, problems=problems))
        return next(replies)

    gate: list[dict[str, Any]] = []
    return gated_summary(chunk, RULED, ask, replaced=100_000, gate=gate), gate, asked


def test_the_retry_prompt_names_the_problem_without_the_structure_reminder() -> None:
    _, _, asked = _gated(summary(), summary(f"- {RULE}"))
    retry = asked[1]
    problems = retry[retry.index(REJECTED_INTRO):]
    assert f'under ## Constraints & Preferences it dropped "{RULE}"' in problems
    assert "Don't start the docs yet" not in problems  # a plan, not a rule
    assert STRICT_REMINDER not in retry and "did not follow the required structure" not in retry


def test_a_retry_that_loses_an_exact_value_does_not_replace_the_first() -> None:
    first = summary()
    worse = summary(f"- {RULE}", context="- burst is set; use `--dry-rotate`")
    written, gate, _ = _gated(first, worse)
    assert "burst is 48, window 750 ms" in written  # the first answer's values survive
    assert f"- {RULE}" in written  # and what the retry added under the rules is merged in
    assert gate == [{"action": "merged", "lost": ["48", "750"], "added": {"## Constraints & Preferences": [RULE]}}]


def test_a_retry_that_loses_a_value_and_adds_nothing_leaves_the_first() -> None:
    written, gate, _ = _gated(summary(), summary(decisions="- **Token bucket**: lock-free"))
    # The first answer, with only the previous summary's rule it dropped put back.
    assert written == summary(f"- {RULE} {CARRIED_MARK}")
    assert gate == [{"action": "keptFirst", "lost": ["refillTokensLocked"]},
                    {"action": "carriedForward", "items": {"## Constraints & Preferences": [RULE]}}]


def test_a_usable_first_answer_survives_a_retry_without_headings() -> None:
    written, _, _ = _gated(summary(), "Sure, here are the rules: never retry a refund twice.")
    assert written == summary(f"- {RULE} {CARRIED_MARK}")


# ---- 3. a short turn prefix is kept, not summarized, and never causes a fallback -----------------

SHORT_REQUEST = "Fix the flaky test in tests/test_io.py; keep the timeout at 30 s."


def _sequential(first: Callable[[], str], second: Callable[[], str]) -> tuple[str, str]:
    return first(), second()


def _split_plan(request: str) -> Any:
    entries = chain(user("first " + sized(600)), assistant("ok " + sized(600)), user(request),
                    assistant("Working: " + sized(500)))
    plan = prepare_compaction(entries, compaction_settings(keep=400).compaction)
    assert plan is not None and plan.is_split_turn and len(plan.turn_prefix_messages) == 1
    return plan


def test_a_short_turn_prefix_is_kept_word_for_word_without_a_request() -> None:
    model = ScriptedModel(INFO, summary())
    result = summarize(_split_plan(SHORT_REQUEST), model, SummaryBudget.for_model(100_000, None, 1000),
                       run_parallel=_sequential)
    assert len(model.history) == 1  # only the history was asked for
    assert result.source == "model"
    prefix = result.summary.split(SPLIT_TURN_SEPARATOR)[1]
    assert prefix.startswith(f"{VERBATIM_PREFIX_INTRO}\n\n[User]: {SHORT_REQUEST}")


def test_a_prefix_summary_longer_than_the_prefix_keeps_the_prefix_not_the_fallback() -> None:
    request = "Fix the flaky test, keep the timeout at 30 s. " + sized(250)
    model = ScriptedModel(INFO, summary(), "## Original Request\n" + sized(400))
    result = summarize(_split_plan(request), model, SummaryBudget.for_model(100_000, None, 1000),
                       run_parallel=_sequential)
    assert result.source == "model" and "fallback" not in result.details
    assert result.summary.startswith(summary() + SPLIT_TURN_SEPARATOR + VERBATIM_PREFIX_INTRO)
    assert request in result.summary
