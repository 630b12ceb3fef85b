"""Automatic recall (issue 23): after a compaction, the compacted originals a new request names are
attached to it, bounded, marked, recorded as a ``custom`` entry and shown by ``/context``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, UNDER_THRESHOLD, ModelHarness, make_model_harness, padded, scripted_summary

from pi_compact.agent.compaction.recall import RECALL_TYPE, RECALLED_INTRO, describe_latest
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.llm.protocol import ChatRequest
from pi_compact.llm.scripted import ScriptedCall, ScriptedReply
from pi_compact.settings import Settings
from pi_compact.settings.schema import parse_settings

FACT = "The burst limit for PAY-1234 is 48 requests, and the error was \"bucket underflow at refill\"."


def _settings(tokens: int = 1000) -> Settings:
    return replace(SETTINGS, compaction=replace(SETTINGS.compaction, auto_recall_tokens=tokens))


def _compacted(tmp_path: Path, settings: Settings = SETTINGS) -> ModelHarness:
    """Facts in the first turns, then padding, then one manual compaction that summarizes them away."""
    h = make_model_harness(tmp_path, settings=settings)
    for text in (FACT, "Other notes: the staging port is 54317.", padded("FILLER-1", 400), padded("FILLER-2", 400)):
        h.model.enqueue(ScriptedReply(text="Noted.", prompt_tokens=UNDER_THRESHOLD))
        h.session.prompt(text)
    h.model.enqueue(scripted_summary())
    assert h.session.compact() is not None
    return h


def _last_text(request: ChatRequest) -> str:
    content = request.messages[-1]["content"]
    return "".join(block.get("text", "") for block in content)


def test_a_question_naming_a_compacted_identifier_gets_the_original_attached(tmp_path: Path) -> None:
    h = _compacted(tmp_path)
    h.model.enqueue(ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt("What burst limit did we set for PAY-1234?")
    request = h.agent_requests()[-1]
    attached = _last_text(request)
    assert request.messages[-1]["role"] == "user" and attached.startswith(RECALLED_INTRO)
    assert FACT in attached and "54317" not in attached
    assert "What burst limit" in _last_text(ChatRequest(request.system, request.messages[:-1], (), None))


def test_the_attachment_is_recorded_as_a_custom_entry_pi_ignores(tmp_path: Path) -> None:
    h = _compacted(tmp_path)
    h.model.enqueue(ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt("What burst limit did we set for PAY-1234?")
    recorded = [e for e in h.entries() if e.get("type") == "custom" and e.get("customType") == RECALL_TYPE]
    assert len(recorded) == 1
    assert [x["text"] for x in recorded[0]["data"]["excerpts"]] == [FACT]
    assert "custom_message" not in {e.get("type") for e in h.entries()}
    assert describe_latest(h.session.store.branch()) == (
        f"~{recorded[0]['data']['tokens']:,} tokens from entries {recorded[0]['data']['excerpts'][0]['entryId']} "
        "(automatic recall)")


def test_the_next_request_does_not_carry_an_earlier_attachment(tmp_path: Path) -> None:
    h = _compacted(tmp_path)
    h.model.enqueue(ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD),
                    ScriptedReply(text="ok", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt("What burst limit did we set for PAY-1234?")
    h.session.prompt("Thanks, carry on with the tests.")
    attached, after = h.agent_requests()[-2:]
    assert FACT in _last_text(attached)
    assert RECALLED_INTRO not in str(after.messages)


def test_zero_auto_recall_tokens_in_the_settings_file_turns_it_off(tmp_path: Path) -> None:
    settings, warnings = parse_settings({"compaction": {"autoRecallTokens": 0}})
    assert warnings == [] and settings.compaction.auto_recall_tokens == 0
    h = _compacted(tmp_path, replace(SETTINGS, compaction=replace(SETTINGS.compaction, auto_recall_tokens=0)))
    h.model.enqueue(ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt("What burst limit did we set for PAY-1234?")
    assert RECALLED_INTRO not in str(h.agent_requests()[-1].messages)


def test_the_attachment_stays_within_auto_recall_tokens(tmp_path: Path) -> None:
    h = _compacted(tmp_path, _settings(40))  # the intro and the fact need more than 40 tokens
    h.model.enqueue(ScriptedReply(text="?", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt("What burst limit did we set for PAY-1234?")
    assert RECALLED_INTRO not in str(h.agent_requests()[-1].messages)
    h2 = _compacted(tmp_path / "b", _settings(120))
    h2.model.enqueue(ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD))
    h2.session.prompt("What burst limit did we set for PAY-1234?")
    attached = _last_text(h2.agent_requests()[-1])
    assert FACT in attached and estimate_text_tokens(attached, "chars4") <= 120


def test_a_tool_step_naming_a_compacted_value_gets_the_original(tmp_path: Path) -> None:
    h = _compacted(tmp_path)
    h.model.enqueue(
        ScriptedReply(tool_calls=(ScriptedCall("grep", {"pattern": "PAY-1234", "path": "."}),),
                      prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text="done", prompt_tokens=UNDER_THRESHOLD),
    )
    h.session.prompt("Look through the code for the ticket.")
    first, second = h.agent_requests()[-2:]
    assert RECALLED_INTRO not in str(first.messages)  # the prompt named nothing compacted
    assert FACT in _last_text(second)  # the grep step named PAY-1234


def test_context_shows_the_latest_attachment(tmp_path: Path) -> None:
    from rich.console import Console

    from pi_compact.ui.status import context_report

    h = _compacted(tmp_path)
    h.model.enqueue(ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt("What burst limit did we set for PAY-1234?")
    console = Console(record=True, width=200)
    console.print(context_report(h.session, "openai/scripted"))
    shown = console.export_text()
    assert "Recalled" in shown and "(automatic recall)" in shown


def test_only_excerpts_whose_values_the_live_context_lacks_are_attached(tmp_path: Path) -> None:
    h = _compacted(tmp_path)
    h.model.enqueue(ScriptedReply(text="Noted.", prompt_tokens=UNDER_THRESHOLD),
                    ScriptedReply(text="48.", prompt_tokens=UNDER_THRESHOLD))
    h.session.prompt('Reminder: PAY-1234 keeps burst 48; the error text is "bucket underflow at refill".')
    h.session.prompt("What burst limit did we set for PAY-1234, and which staging port 54317 host?")
    attached = _last_text(h.agent_requests()[-1])
    assert "the staging port is 54317" in attached and FACT not in attached


def test_a_message_of_common_words_asks_for_nothing_so_no_old_entry_is_read() -> None:
    from pi_compact.agent.compaction.recall import wanted

    def said(text: str) -> list[dict[str, object]]:
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]

    assert wanted(said("and now?")) is None
    assert wanted(said("go on")) is None
    assert wanted(said("fix AUTH-4123 please")) is not None
    assert wanted(said("what did we decide about the retry budget")) is not None


def test_in_a_tool_loop_an_earlier_call_is_not_recalled_but_what_it_returned_is(tmp_path: Path) -> None:
    # The embedded model, shown its own earlier edit call mid-loop, made that call again and again.
    h = make_model_harness(tmp_path, settings=SETTINGS)
    h.model.enqueue(
        ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": "echo 'limit PAY-1234 burst 48'"}),),
                      prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text="Noted.", prompt_tokens=UNDER_THRESHOLD),
    )
    h.session.prompt("Print the limit.")
    for text in (padded("FILLER-1", 400), padded("FILLER-2", 400)):
        h.model.enqueue(ScriptedReply(text="Noted.", prompt_tokens=UNDER_THRESHOLD))
        h.session.prompt(text)
    h.model.enqueue(scripted_summary())
    assert h.session.compact() is not None
    h.model.enqueue(
        ScriptedReply(tool_calls=(ScriptedCall("grep", {"pattern": "PAY-1234", "path": "."}),),
                      prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text="done", prompt_tokens=UNDER_THRESHOLD),
    )
    h.session.prompt("Look through the code.")
    attached = _last_text(h.agent_requests()[-1])
    assert "limit PAY-1234 burst 48" in attached and "· toolResult>>>" in attached
    assert "· assistant>>>" not in attached and "echo " not in attached
