"""A model for background-compaction tests and the benchmark: a scripted agent and a gated summarizer.

``ReadingModel`` answers the agent loop's requests with ``ANSWER-<n>`` padded to ``answer_tokens`` and
reports as usage what the request really holds (estimated), so the context measure follows compactions.
It answers the compaction summarizer (its own system prompt) with a summary the validator accepts, but
only once ``reading`` is set: the test sets it while the "user reads" between two prompts. A summary
asked for on the foreground path, inside a prompt, finds it clear and (after ``gate_timeout_s``) fails
with ``FOREGROUND``, which the tests see. ``summary_delay_s`` makes every summary take that long.
Every call is recorded with the name of the thread that made it. Safe to call from several threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pi_compact.cancel import CancelToken
from pi_compact.compaction.prompts import HISTORY_HEADINGS, SYSTEM_PROMPT, TURN_PREFIX_HEADINGS, TURN_PREFIX_PROMPT
from pi_compact.compaction.tokens import estimate_text_tokens, estimate_tokens_chars4
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    ModelInfo,
    StreamEvent,
    TextDelta,
    aborted_message,
    assistant_message,
    empty_usage,
)

SUMMARY = "\n".join(f"{heading}\n- scripted summary line" for heading in HISTORY_HEADINGS)
PREFIX_SUMMARY = "\n".join(f"{heading}\n- prefix line" for heading in TURN_PREFIX_HEADINGS)
FOREGROUND = "a summary was asked for outside the reading window"


def padded(marker: str, tokens: int) -> str:
    """Text that starts with ``marker`` and is exactly ``tokens`` chars/4 tokens long."""
    return (marker + " " + "lorem ipsum " * tokens)[: tokens * 4]


@dataclass(frozen=True)
class Call:
    kind: str  # "agent" or "summarizer"
    thread: str
    request: ChatRequest


class ReadingModel(ChatModel):
    """The agent's scripted answers and a summarizer that answers only while the user reads."""

    def __init__(
        self, info: ModelInfo, *, answer_tokens: int = 450, summary_delay_s: float = 0.0,
        gate_timeout_s: float = 10.0, fail_summaries: bool = False, summary_tokens: int = 0,
    ) -> None:
        self._info = info
        self.answer_tokens = answer_tokens
        self.summary_delay_s = summary_delay_s
        self.gate_timeout_s = gate_timeout_s
        self.fail_summaries = fail_summaries
        self.summary_tokens = summary_tokens  # > 0: the summary carries that many more tokens
        self.reading = threading.Event()
        self.calls: list[Call] = []
        self.before_answer: Callable[[int, CancelToken], None] | None = None  # runs before agent answer n
        self._lock = threading.Lock()
        self._answers = 0

    @property
    def info(self) -> ModelInfo:
        return self._info

    def summarizer_calls(self) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.kind == "summarizer"]

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        token = cancel or CancelToken()
        kind = "summarizer" if request.system == SYSTEM_PROMPT else "agent"
        with self._lock:
            self.calls.append(Call(kind, threading.current_thread().name, request))
            if kind == "agent":
                self._answers += 1
                number = self._answers
        if kind == "summarizer":
            return self._summary(request, token)
        return self._answer(request, number, token)

    def _answer(self, request: ChatRequest, number: int, cancel: CancelToken) -> Iterator[StreamEvent]:
        if self.before_answer is not None:
            self.before_answer(number, cancel)
        if cancel.cancelled:
            yield Done(aborted_message(self._info))
            return
        text = padded(f"ANSWER-{number}", self.answer_tokens)
        prompt = estimate_text_tokens(request.system) + sum(estimate_tokens_chars4(m) for m in request.messages)
        usage = {**empty_usage(), "input": prompt, "output": self.answer_tokens,
                 "totalTokens": prompt + self.answer_tokens}
        yield TextDelta(text)
        yield Done(assistant_message(self._info, [{"type": "text", "text": text}], stop_reason="stop", usage=usage))

    def _summary(self, request: ChatRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        waited = 0.0
        while not self.reading.wait(0.02):
            waited += 0.02
            if cancel.cancelled:
                yield Done(aborted_message(self._info))
                return
            if waited >= self.gate_timeout_s:
                yield Done(assistant_message(self._info, [], stop_reason="error", error=FOREGROUND))
                return
        if self.summary_delay_s and cancel.wait(self.summary_delay_s) or cancel.cancelled:
            yield Done(aborted_message(self._info))
            return
        if self.fail_summaries:
            yield Done(assistant_message(self._info, [], stop_reason="error", error="scripted summarizer failure"))
            return
        asked = "".join(str(b.get("text", "")) for m in request.messages for b in m.get("content") or ())
        text = PREFIX_SUMMARY if TURN_PREFIX_PROMPT in asked else SUMMARY
        if self.summary_tokens and text == SUMMARY:
            text += "\n- " + padded("detail", self.summary_tokens)
        yield TextDelta(text)
        yield Done(assistant_message(self._info, [{"type": "text", "text": text}], stop_reason="stop",
                                     usage={**empty_usage(), "input": 100, "output": 50, "totalTokens": 150}))
