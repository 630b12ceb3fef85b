"""The tool loop stops on its own: a model repeating one call, and the ``maxTurns`` limit (``agent.loop``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, make_model_harness

from pi_compact.agent.events import AgentEnd, Notice
from pi_compact.llm.scripted import ScriptedCall, ScriptedReply


def test_a_model_repeating_one_tool_call_is_stopped_within_five_repeats_with_one_line_naming_it(
    tmp_path: Path,
) -> None:
    stuck = ScriptedReply(tool_calls=(ScriptedCall("read", {"path": "app.py"}),), repeat=True)
    h = make_model_harness(tmp_path, stuck)
    (h.cwd / "app.py").write_text("print('hi')\n", encoding="utf-8")
    final = h.session.prompt("Fix the bug in app.py.")
    assert final is not None and final["stopReason"] == "toolUse"
    assert len(h.agent_requests()) <= 5
    [notice] = [e for e in h.events if isinstance(e, Notice)]
    assert notice.level == "warning"
    assert notice.text.startswith("Stopped: the model called `read app.py` 4 times in a row with the same arguments")
    assert "\n" not in notice.text
    assert [e.error_message for e in h.events if isinstance(e, AgentEnd)] == [notice.text]
    # The refused call still has its result: the next prompt's transcript is valid.
    last = h.entries()[-1]["message"]
    assert last["role"] == "toolResult" and last["isError"] is True
    assert last["content"][0]["text"].startswith("Not run: Stopped")


def test_max_turns_stops_the_loop_after_that_many_model_replies(tmp_path: Path) -> None:
    replies = [ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": f"echo {i}"}),)) for i in range(10)]
    settings = replace(SETTINGS, max_turns=3)
    h = make_model_harness(tmp_path, *replies, settings=settings)
    h.session.prompt("Count.")
    assert len(h.agent_requests()) == 3
    [notice] = [e for e in h.events if isinstance(e, Notice)]
    assert notice.text.startswith("Stopped after 3 model turns")
    assert h.session.loop_stop is not None


def test_different_calls_and_no_limit_run_on_until_the_model_answers(tmp_path: Path) -> None:
    replies = [ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": f"echo {i}"}),)) for i in range(8)]
    h = make_model_harness(tmp_path, *replies, "Done.")
    final = h.session.prompt("Count.")
    assert final is not None and final["stopReason"] == "stop"
    assert len(h.agent_requests()) == 9 and h.session.loop_stop is None


def test_the_max_turns_setting_is_read_from_a_settings_file_and_applies_to_the_session(tmp_path: Path) -> None:
    from pi_compact.settings.schema import parse_settings

    parsed, warnings = parse_settings({"maxTurns": 2, "compaction": {"tokenEstimator": "chars4"}})
    assert warnings == [] and parsed.max_turns == 2
    replies = [ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": f"echo {i}"}),)) for i in range(5)]
    h = make_model_harness(tmp_path, *replies, settings=replace(SETTINGS, max_turns=parsed.max_turns))
    h.session.prompt("Count.")
    assert len(h.agent_requests()) == 2


def test_a_model_going_round_three_failing_edits_is_stopped_at_the_fourth_round(tmp_path: Path) -> None:
    edits = [ScriptedReply(tool_calls=(ScriptedCall("edit", {"path": f"{name}.py", "oldText": "a", "newText": "b"}),))
             for name in ("quota", "refill", "shard")]
    h = make_model_harness(tmp_path, *(edits * 10), "Done.")
    final = h.session.prompt("Carry on.")
    assert final is not None and final["stopReason"] == "toolUse"
    assert len(h.agent_requests()) == 12  # three rounds run, the fourth round's last call refused
    [notice] = [e for e in h.events if isinstance(e, Notice)]
    assert notice.text.startswith(
        "Stopped: the model made the same 3 calls (`edit quota.py`, `edit refill.py`, `edit shard.py`) 4 times over")
    assert h.session.loop_stop is not None and h.session.loop_stop.repeated == "edit shard.py"


def test_an_edit_and_test_cycle_that_changes_its_edit_runs_on(tmp_path: Path) -> None:
    replies = []
    for i in range(6):
        edit = ScriptedCall("edit", {"path": "app.py", "oldText": "x", "newText": f"{i}"})
        replies.append(ScriptedReply(tool_calls=(edit,)))
        replies.append(ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": "pytest -q"}),)))
    h = make_model_harness(tmp_path, *replies, "Fixed.")
    final = h.session.prompt("Fix it.")
    assert final is not None and final["stopReason"] == "stop"
    assert len(h.agent_requests()) == 13 and h.session.loop_stop is None


def test_a_cycle_of_five_failing_edits_is_stopped_too(tmp_path: Path) -> None:
    names = ("shard", "refill", "store", "store/quota", "store/refill")
    edits = [ScriptedReply(tool_calls=(ScriptedCall("edit", {"path": f"{n}.py", "oldText": "a", "newText": "b"}),))
             for n in names]
    h = make_model_harness(tmp_path, *(edits * 6), "Done.")
    h.session.prompt("Carry on.")
    assert len(h.agent_requests()) == 20
    assert h.session.loop_stop is not None and h.session.loop_stop.repeated == "edit store/refill.py"
