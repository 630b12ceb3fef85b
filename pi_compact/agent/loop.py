"""The tool loop: stream an assistant reply, run the tools it called, in order, and go on while it calls them.

``run_loop`` owns the loop's control flow; the session hands it hooks for what surrounds it (the next
request, persisting, compaction after a reply and between turns), as pi's agent loop takes its session's.
A tool failure becomes a ``toolResult`` with ``isError: true`` that the model can read; it never
escapes as an exception.

Loop limits (pi has none): ``LoopLimits.check`` is asked once per reply that calls tools, before they
run. It stops the loop at the ``maxTurns``-th reply of a prompt (``--max-turns`` or the setting; None: no
limit), or when the reply's calls make ``REPEAT_LIMIT`` identical calls in a row (same tool, same
arguments), or repeat a cycle of up to ``CYCLE_LIMIT`` calls that often: a model that reads the same
file again and again will not stop by itself; and, in the terminal, when edits churn (``agent.churn``:
one file edited again and again with no passing test, a test changed when a fix was asked for). The
stopping reply's calls are answered by
``refuse_tool_calls`` with ``LoopStop.for_model`` (why, and not to repeat it: the next prompt's model
reads it); ``LoopStop.text`` is the one line the user reads, with the count and the call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pi_compact.agent.approval import DECLINED
from pi_compact.agent.churn import EditChurn
from pi_compact.agent.events import (
    AgentEnd,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    Notice,
    Retry,
    SessionEvent,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from pi_compact.agent.request import failed_reply
from pi_compact.agent.tools import Tool, ToolContext, ToolOutput, precheck, run_tool, tool_result_message
from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.errors import PiCompactError, SessionError
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    Noted,
    Retrying,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    aborted_message,
)

Emit = Callable[[SessionEvent], None]
Approve = Callable[[str, Mapping[str, Any], CancelToken | None], bool]  # the approval mode: may a call run?


def stream_reply(model: ChatModel, request: ChatRequest, cancel: CancelToken | None, emit: Emit) -> dict[str, Any]:
    """Stream one assistant message, reporting deltas; returns the final pi-shaped message.

    A ``ModelError`` that ``model.stream`` raises before sending anything (a missing API key)
    propagates before ``MessageStart``, so no message is left half-reported.
    """
    events = model.stream(request, cancel)
    emit(MessageStart("assistant"))
    final: dict[str, Any] | None = None
    try:
        for event in events:
            if isinstance(event, TextDelta):
                emit(MessageUpdate("text", event.text))
            elif isinstance(event, ThinkingDelta):
                emit(MessageUpdate("thinking", event.text))
            elif isinstance(event, ToolCallDelta):
                emit(MessageUpdate("toolCall", event.arguments_fragment))
            elif isinstance(event, Retrying):
                emit(Retry.of(event))
            elif isinstance(event, Noted):
                emit(Notice(event.text, "info"))
            elif isinstance(event, Done):
                final = event.message
    except KeyboardInterrupt:
        final = aborted_message(model.info)
    if final is None:
        final = aborted_message(model.info)
    emit(MessageEnd(final))
    return final


def tool_calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The toolCall blocks of an assistant message, in order."""
    return [
        block for block in message.get("content") or ()
        if isinstance(block, Mapping) and block.get("type") == "toolCall"
    ]


def run_tool_calls(
    message: Mapping[str, Any],
    tools: Sequence[Tool],
    ctx: ToolContext,
    emit: Emit,
    on_result: Callable[[dict[str, Any]], None],
    approve: Approve | None = None,
) -> bool:
    """Execute each tool call of ``message`` in order; False when cancelled part-way.

    ``approve(name, args, cancel)`` (the approval mode) may decline a call: it is then not run and the
    model gets an error result saying the user declined it."""
    by_name = {tool.name: tool for tool in tools}
    for call in tool_calls(message):
        call_id = str(call.get("id", ""))
        name = str(call.get("name", ""))
        raw_args = call.get("arguments")
        args: dict[str, Any] = dict(raw_args) if isinstance(raw_args, Mapping) else {}
        if ctx.cancelled:
            output = ToolOutput("Not run: the user cancelled the turn.", is_error=True)
        else:
            emit(ToolExecutionStart(call_id, name, args))
            tool = by_name.get(name)
            # A call sure to fail (an edit whose oldText is not in the file) gets its error without a question.
            refused = precheck(tool, args, ctx) if tool is not None and approve is not None else None
            if refused is not None:
                output = refused
            elif tool is not None and approve is not None and not approve(name, args, ctx.cancel):
                output = ToolOutput(DECLINED, is_error=True)
            elif tool is None:
                known = ", ".join(sorted(by_name))
                output = ToolOutput(f"Unknown tool {name!r}; available tools: {known}.", is_error=True)
            else:
                output = run_tool(tool, args, ctx)
        result = tool_result_message(call_id, name, output, now_ms())
        emit(ToolExecutionEnd(call_id, name, result, output.is_error))
        emit(MessageStart("toolResult"))
        emit(MessageEnd(result))
        on_result(result)
    return not ctx.cancelled


def refuse_tool_calls(
    message: Mapping[str, Any], reason: str, emit: Emit, on_result: Callable[[dict[str, Any]], None],
) -> None:
    """Answer each tool call of ``message`` with an error result saying ``reason``, running none of them (the
    transcript stays valid and the model reads why). The results carry ``details.loopStop``: the terminal
    shows the stop as its one notice line, not once per refused call."""
    for call in tool_calls(message):
        call_id, name = str(call.get("id", "")), str(call.get("name", ""))
        output = ToolOutput(f"Not run: {reason}", is_error=True, details={"loopStop": True})
        result = tool_result_message(call_id, name, output, now_ms())
        emit(ToolExecutionEnd(call_id, name, result, True))
        emit(MessageStart("toolResult"))
        emit(MessageEnd(result))
        on_result(result)


def is_loop_stop(result: Mapping[str, Any]) -> bool:
    """Whether a tool result is one ``refuse_tool_calls`` gave (a call the loop limits did not run)."""
    details = result.get("details")
    return isinstance(details, Mapping) and details.get("loopStop") is True


# Three identical calls can still be a model checking its own work; a fourth is a loop. The refused
# call is the fourth, so a stuck model is stopped within four requests.
REPEAT_LIMIT = 4
# A model can also go round a few calls (edit a, edit b, edit c, edit a, ...): the embedded model did so
# for 60 requests after a compaction, round three and then five files, each edit failing the same way,
# and a cycle of nine calls once ran 151 requests. A cycle of up to this many calls, made REPEAT_LIMIT
# times in a row with the same arguments, is stopped as one repeated call is. (An edit-and-test cycle that
# makes progress changes its edit's arguments, so it is not a cycle.)
CYCLE_LIMIT = 50
# Lookups that give the same answer every time within a turn: the embedded model recalled ``test_calc.py``
# four times between other calls. The third identical one is refused and the model gets one reply to answer
# from what it has (issue 44's walk: it found the codename and kept recalling it); a fourth stops the turn.
LOOKUPS = frozenset({"recall"})
LOOKUP_LIMIT = 3


@dataclass(frozen=True)
class LoopStop:
    """Why the loop stopped: ``text`` is the one line the user reads (the cause and what to do),
    ``for_model`` what each refused call's result tells the model; ``repeated`` is the repeated call and
    ``count`` how many times in a row it (or the cycle) was made; ``last_word``: one more reply may answer."""

    text: str
    repeated: str | None = None
    for_model: str = ""
    count: int = 0
    last_word: bool = False


def call_label(call: Mapping[str, Any]) -> str:
    """A call as the user knows it: the tool and its main argument (``read src/app.py``)."""
    raw = call.get("arguments")
    args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    main = next((str(args[k]) for k in ("path", "command", "pattern", "query") if isinstance(args.get(k), str)), "")
    return f"{call.get('name')} {main}".strip()[:80]


def _signature(call: Mapping[str, Any]) -> str:
    raw = call.get("arguments")
    return json.dumps([call.get("name"), raw if isinstance(raw, Mapping) else {}], sort_keys=True, default=str)


_ADVICE_FOR_MODEL = (" Running it again gives the same result: do not repeat it. Use what the earlier results say, "
                     "try something different, or tell the user what blocks you.")


class LoopLimits:
    """The counts of one prompt's tool loop (a new one per prompt)."""

    def __init__(self, max_turns: int | None, churn: EditChurn | None = None) -> None:
        self._max_turns = max_turns
        self._turns = 0
        self._calls: list[tuple[str, str]] = []  # (signature, label) of this prompt's calls
        self._churn = churn  # edits without a passing test (``agent.churn``); None: not watched (print mode)

    def saw(self, result: Mapping[str, Any]) -> None:
        """A tool result of this prompt (a passing test run resets the edit counts)."""
        if self._churn is not None:
            self._churn.saw(result)

    def check(self, reply: Mapping[str, Any]) -> LoopStop | None:
        """Count ``reply`` (it calls tools); a ``LoopStop`` when its calls must not run (none of them runs)."""
        self._turns += 1
        calls = tool_calls(reply)
        found: tuple[int, int] | None = None  # (period, how many calls had been made) when a cycle closed
        for call in calls:
            self._calls.append((_signature(call), call_label(call)))
            if found is None:
                period = self._cycle()
                found = (period, len(self._calls)) if period else None
        if found is not None:
            return self._repeated(*found, len(calls))
        looked_up = self._looked_up_again(calls)
        if looked_up is not None:
            return looked_up
        churned = self._churn.check(calls) if self._churn is not None else None
        if churned is not None:
            return LoopStop(churned.text, call_label({"name": "edit", "arguments": {"path": churned.path}}),
                            churned.for_model, self._turns)
        if self._max_turns is not None and self._turns >= self._max_turns:
            return LoopStop(
                f"Stopped after {self._turns} model turn{'' if self._turns == 1 else 's'} (the limit is "
                f"{self._max_turns}; raise it with --max-turns N or the maxTurns setting); the tool calls of the "
                "last reply were not run. Send a prompt to go on.",
                for_model=f"this prompt reached its limit of {self._max_turns} model replies (maxTurns), so the "
                "loop was stopped before this call. Tell the user what is done and what is left.",
                count=self._turns)
        return None

    def _looked_up_again(self, calls: Sequence[Mapping[str, Any]]) -> LoopStop | None:
        """A stop when a lookup whose answer this turn cannot change (``LOOKUPS``) is made for the
        ``LOOKUP_LIMIT``-th time with the same arguments, in a row or not."""
        for call in calls:
            if call.get("name") not in LOOKUPS:
                continue
            signature = _signature(call)
            count = sum(1 for made, _ in self._calls if made == signature)
            if count >= LOOKUP_LIMIT:
                label, first = call_label(call), count == LOOKUP_LIMIT
                return LoopStop(
                    f"Stopped: the model called `{label}` {count} times in this turn with the same arguments "
                    "(it finds the same each time); that call was not run. Say what to do differently, or try "
                    "another model.",
                    label, f"`{label}` was called {count} times in this turn with the same arguments, and it "
                    "returns the same each time, so " + (
                        "this call was not run: its result is above. Answer the user now from what the earlier "
                        "results say, quoting the lines that answer, or say that you did not find it." if first
                        else "the loop guard stopped this turn before this call." + _ADVICE_FOR_MODEL),
                    count, last_word=first)
        return None

    def _cycle(self) -> int:
        """The period when the last calls are one call, or a cycle of up to CYCLE_LIMIT, made REPEAT_LIMIT
        times in a row; else 0."""
        calls = self._calls
        for period in range(1, CYCLE_LIMIT + 1):
            span = period * REPEAT_LIMIT
            if len(calls) < span:
                break
            if all(calls[-span + i][0] == calls[-period + i % period][0] for i in range(span)):
                return period
        return 0

    def _repeated(self, period: int, made: int, in_reply: int) -> LoopStop:
        """The stop for a call (``period`` 1) or cycle repeated up to call ``made``; ``in_reply``: the calls
        of the stopped reply (none of them runs)."""
        calls = self._calls
        cycle = calls[made - period : made]
        not_run = ("the last call was not run" if in_reply == 1
                   else f"none of the {in_reply} calls of its last reply ran")
        if period == 1:
            signature, label = cycle[0]
            start, end = made - 1, made
            while start > 0 and calls[start - 1][0] == signature:
                start -= 1
            while end < len(calls) and calls[end][0] == signature:
                end += 1
            count = end - start
            text = f"Stopped: the model called `{label}` {count} times in a row with the same arguments; {not_run}."
            why = f"`{label}` was called {count} times in a row with the same arguments"
        else:
            count = REPEAT_LIMIT
            labels = ", ".join(f"`{label}`" for _, label in cycle)
            text = (f"Stopped: the model made the same {period} calls ({labels}) {count} times over with the same "
                    f"arguments; {not_run}.")
            why = f"the same {period} calls ({labels}) were made {count} times over with the same arguments"
        return LoopStop(text + " Say what to do differently, or try another model.", cycle[-1][1],
                        f"the loop guard stopped this turn before this call because {why}." + _ADVICE_FOR_MODEL,
                        count)


@dataclass(frozen=True)
class LoopHooks:
    """What the session does around the loop: ``request`` builds the next request, ``record`` persists a
    message, ``after_reply(reply, retried)`` handles an overflow ("retry" once, "done", or None to go on),
    ``between_turns`` compacts past the threshold (True when it ran) and ``before_send``, once the prompt is
    recorded, makes the context smaller before its first request where the prompt took it past the
    threshold (True when it compacted)."""

    request: Callable[[], ChatRequest]
    record: Callable[[dict[str, Any]], None]
    after_reply: Callable[[dict[str, Any], bool], Literal["retry", "done"] | None]
    between_turns: Callable[[], bool]
    before_send: Callable[[], bool] = lambda: False


def run_loop(model: ChatModel, hooks: LoopHooks, tools: Sequence[Tool], context: ToolContext, emit: Emit,
             approve: Approve | None, max_turns: int | None,
             churn: EditChurn | None = None) -> tuple[dict[str, Any], LoopStop | None]:
    """Run one prompt's turns until a reply calls no tools (or fails, is cancelled, or a limit stops it);
    the last reply and, when the loop limits stopped it, why."""
    retried, limits = False, LoopLimits(max_turns, churn)

    def record(result: dict[str, Any]) -> None:
        limits.saw(result)
        hooks.record(result)

    while True:  # as long as the model calls tools, up to the loop limits (pi has none: Ctrl-C stops it)
        reply = stream_reply(model, hooks.request(), context.cancel, emit)
        hooks.record(reply)
        stop = reply.get("stopReason")
        if stop == "aborted" or context.cancelled:
            return reply, None
        overflow = hooks.after_reply(reply, retried)
        if overflow == "retry":  # compacted: ask again, once
            retried = True
            continue
        if overflow == "done" or stop == "error" or not tool_calls(reply):
            return reply, None
        halt = limits.check(reply)
        if halt is not None:
            refuse_tool_calls(reply, halt.for_model or halt.text, emit, hooks.record)
            if halt.last_word:  # the same request again (its cached prefix kept), now with the refusal
                continue
            emit(Notice(halt.text, "warning"))
            return reply, halt
        if not run_tool_calls(reply, tools, context, emit, record, approve):
            return reply, None
        # Beyond pi: compact between tool turns, then carry on with the summary and the tail.
        if hooks.between_turns() and context.cancelled:
            return reply, None


def run_prompt(text: str, model: ChatModel, hooks: LoopHooks, tools: Sequence[Tool], context: ToolContext,
               emit: Emit, approve: Approve | None, max_turns: int | None,
               now: Callable[[], int] = now_ms, *, watch_edits: bool = True) -> tuple[dict[str, Any], LoopStop | None]:
    """One user prompt, from ``agent_start`` to ``agent_end``: its message, then ``run_loop``
    (``watch_edits``: stop edit churn and ask, ``agent.churn``; print mode has its turn cap instead)."""
    emit(AgentStart())
    _say(emit, hooks, {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now()})
    halt: LoopStop | None = None
    try:
        hooks.before_send()
        if context.cancelled:  # cancelled while the context was made smaller: nothing was sent
            final = aborted_message(model.info)
            _say(emit, hooks, final)  # recorded as a cancelled stream is: the prompt has its (empty) reply
            emit(AgentEnd(str(final.get("errorMessage"))))
            return final, None
        final, halt = run_loop(model, hooks, tools, context, emit, approve, max_turns,
                               EditChurn(text) if watch_edits else None)
    except SessionError as exc:  # a write failed: recording a failed reply would write again
        emit(AgentEnd(str(exc)))
        raise
    except PiCompactError as exc:
        # Raised before a request was sent (no API key, unknown window): recorded as pi records a failed
        # reply, so the transcript stays well-formed and a retry does not stack prompts.
        final = failed_reply(str(exc), now())
        _say(emit, hooks, final)
    error = final.get("errorMessage") if final.get("stopReason") in ("error", "aborted") else None
    emit(AgentEnd(halt.text if halt is not None else str(error) if error else None))
    return final, halt


def _say(emit: Emit, hooks: LoopHooks, message: dict[str, Any]) -> None:
    emit(MessageStart(str(message["role"])))
    emit(MessageEnd(message))
    hooks.record(message)
