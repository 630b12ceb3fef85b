"""The tool loop stops on its own: a model repeating one call, and the ``maxTurns`` limit (``agent.loop``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, ModelHarness, make_model_harness

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
    assert last["content"][0]["text"].startswith("Not run: the loop guard stopped this turn before this call")


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


NINE = ("quota", "refill", "shard", "store", "bucket", "limits", "rates", "tenant", "window")


def test_a_cycle_of_nine_failing_edits_is_stopped_at_its_fourth_round(tmp_path: Path) -> None:
    edits = [ScriptedReply(tool_calls=(ScriptedCall("edit", {"path": f"{n}.py", "oldText": "a", "newText": "b"}),))
             for n in NINE]
    h = make_model_harness(tmp_path, *(edits * 17), "Done.")  # 153 replies: the run that went on for 151
    h.session.prompt("Carry on.")
    assert len(h.agent_requests()) == 36  # three rounds run, the fourth round's last call refused
    assert h.session.loop_stop is not None and h.session.loop_stop.repeated == "edit window.py"
    assert h.session.loop_stop.text.startswith("Stopped: the model made the same 9 calls (`edit quota.py`, ")


def test_a_nine_step_edit_and_test_cycle_that_changes_its_edit_runs_on(tmp_path: Path) -> None:
    replies = []
    for round_ in range(6):
        for n in NINE[:8]:
            replies.append(ScriptedReply(tool_calls=(ScriptedCall("read", {"path": f"{n}.py"}),)))
        edit = ScriptedCall("edit", {"path": "app.py", "oldText": "x", "newText": f"attempt {round_}"})
        replies.append(ScriptedReply(tool_calls=(edit,)))
    h = make_model_harness(tmp_path, *replies, "Fixed.")
    final = h.session.prompt("Fix it.")
    assert final is not None and final["stopReason"] == "stop"
    assert len(h.agent_requests()) == 55 and h.session.loop_stop is None


def _sixteen_greps(tmp_path: Path, *after: str) -> ModelHarness:
    greps = tuple(ScriptedCall("grep", {"pattern": "refill_rate"}) for _ in range(16))
    h = make_model_harness(tmp_path, ScriptedReply(tool_calls=greps), *after)
    h.session.prompt("Where is refill_rate set?")
    return h


def test_sixteen_identical_calls_in_one_reply_show_as_one_line_with_the_count_and_the_call(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from pi_compact.ui.renderer import TerminalRenderer

    h = _sixteen_greps(tmp_path)
    buffer = io.StringIO()
    renderer = TerminalRenderer(Console(file=buffer, width=400, color_system=None))
    for event in h.events:  # what the terminal received, in order
        renderer(event)
    renderer.close()
    lines = [line for line in buffer.getvalue().splitlines() if line.strip()]
    assert lines == ["Stopped: the model called `grep refill_rate` 16 times in a row with the same arguments; none "
                     "of the 16 calls of its last reply ran. Say what to do differently, or try another model."]


def test_after_a_guard_stop_the_next_request_tells_the_model_the_call_was_stopped_and_why(tmp_path: Path) -> None:
    h = _sixteen_greps(tmp_path, "It is set in limits.py.")
    h.session.prompt("Go on.")
    results = [m for m in h.agent_requests()[-1].messages if m.get("role") == "toolResult"]
    assert len(results) == 16 and all(m["isError"] for m in results)
    assert results[0]["content"][0]["text"] == (
        "Not run: the loop guard stopped this turn before this call because `grep refill_rate` was called 16 times "
        "in a row with the same arguments. Running it again gives the same result: do not repeat it. Use what the "
        "earlier results say, try something different, or tell the user what blocks you.")


def test_a_recall_made_a_third_time_in_a_turn_between_other_calls_is_stopped(tmp_path: Path) -> None:
    # Issue 44, item 7: after its fix the embedded model recalled test_calc.py four times, between other
    # calls, so no run of identical calls formed and the loop went on.
    recall = ScriptedReply(tool_calls=(ScriptedCall("recall", {"query": "test_calc.py"}),))
    replies = []
    for n in range(4):
        replies += [recall, ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": f"echo {n}"}),))]
    h = make_model_harness(tmp_path, *replies, "Done.")
    h.session.prompt("Fix calc.py.")
    # recall, echo, recall, echo, the third recall refused with one more reply allowed (an echo), and the
    # fourth recall stops the turn
    assert len(h.agent_requests()) == 7
    [notice] = [e for e in h.events if isinstance(e, Notice)]
    assert notice.text.startswith("Stopped: the model called `recall test_calc.py` 4 times in this turn")


def test_a_recall_refused_the_third_time_leaves_the_model_one_reply_that_answers_and_ends_the_turn(
    tmp_path: Path,
) -> None:
    # Issue 44's walk on 7834eb3: the embedded model saw the codename in the cut read, recalled it three times
    # and the turn ended with no answer; the refusal now asks it to answer from what it has.
    recall = ScriptedReply(tool_calls=(ScriptedCall("recall", {"query": "COPPER-KITE"}),))
    h = make_model_harness(tmp_path, recall, recall, recall, "The codename is COPPER-KITE.")
    final = h.session.prompt("Which codename was decided at meeting 137?")
    assert final is not None and final["stopReason"] == "stop"
    assert final["content"][0]["text"] == "The codename is COPPER-KITE."
    assert len(h.agent_requests()) == 4 and h.session.loop_stop is None
    assert [e for e in h.events if isinstance(e, Notice) and e.text.startswith("Stopped")] == []
    refused = [m for m in h.agent_requests()[-1].messages if m.get("role") == "toolResult"][-1]
    assert refused["isError"] is True
    assert "Answer the user now from what the earlier results say" in refused["content"][0]["text"]
    # the same request as before the refusal, plus it: the tools (and so the cached prefix) are unchanged
    assert h.agent_requests()[-1].tools == h.agent_requests()[-2].tools


def test_a_fourth_identical_recall_after_the_last_reply_stops_the_turn(tmp_path: Path) -> None:
    recall = ScriptedReply(tool_calls=(ScriptedCall("recall", {"query": "COPPER-KITE"}),), repeat=True)
    h = make_model_harness(tmp_path, recall)
    final = h.session.prompt("Which codename was decided at meeting 137?")
    assert final is not None and final["stopReason"] == "toolUse"
    assert len(h.agent_requests()) == 4
    [notice] = [e for e in h.events if isinstance(e, Notice)]
    assert notice.text.startswith("Stopped: the model called `recall COPPER-KITE` 4 times")
    last = h.entries()[-1]["message"]
    assert last["role"] == "toolResult" and last["content"][0]["text"].startswith("Not run: ")
