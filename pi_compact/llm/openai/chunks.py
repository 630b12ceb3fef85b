"""Server-sent events of an OpenAI-compatible answer -> chunks for ``MessageAssembler``, as litellm reads them.

``ChunkReader.chunks(events)`` passes on what litellm's stream wrapper would, so the direct client and
the litellm path assemble the same message; the rules are written next to the code that applies them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pi_compact.llm.assemble import Pieces
from pi_compact.llm.failures import FailureRaised
from pi_compact.llm.http_sse import SseEvent
from pi_compact.llm.openai.body import without_null_content
from pi_compact.llm.openai.failures import finish_reason_error, stream_failure
from pi_compact.llm.stream_loop import READING_KEY

# litellm's finish-reason table, by the reason it maps to; a reason not listed maps to "stop".
_FINISH_GROUPS = {
    "length": ("length", "max_tokens", "compaction", "pause_turn", "model_context_window_exceeded", "MAX_TOKENS",
               "CONTINUATION"),
    "tool_calls": ("tool_calls", "tool_use", "TOOL_CALL"),
    "function_call": ("function_call",),
    "content_filter": ("content_filter", "content_filtered", "refusal", "ERROR_TOXIC", "SAFETY", "RECITATION",
                       "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                       "IMAGE_PROHIBITED_CONTENT", "NO_IMAGE", "IMAGE_RECITATION", "IMAGE_OTHER", "ESCALATION",
                       "sensitive", "guardrail_intervened"),
}
_FINISH_MAP = {raw: mapped for mapped, raws in _FINISH_GROUPS.items() for raw in raws}
_STREAM_ERROR_TEXT = "An error occurred during streaming"
_REPEAT_LIMIT = int(os.environ.get("REPEATED_STREAMING_CHUNK_LIMIT") or 100)  # litellm's setting
_DELTA_FIELDS = ("content", "reasoning_content", "tool_calls", "thinking_blocks")  # what the assembler reads

# (model, messages as sent, reply text, reply thinking, tool calls) -> (prompt, completion) tokens:
# how litellm counts a reply whose server reported no usage (``litellm_model.estimate_stream_usage``).
UsageEstimate = Callable[[str, Sequence[Mapping[str, Any]], str, str, Sequence[Mapping[str, str]]], tuple[int, int]]


def map_finish_reason(reason: str) -> str:
    return _FINISH_MAP.get(reason, "stop")


class ChunkReader:
    """Reads one answer; ``model`` and ``messages`` are what was asked, for ``estimate`` (without one,
    a count the server did not report is 0).

    - an event that is not JSON, an event ``{"error": ...}``, or a choice finishing with ``abort`` ends
      the stream with a failure (the error's own message, else "An error occurred during streaming");
      so does a stream that sent chunks but no finish reason; a finish reason ``error`` is a
      connection error (``failures.finish_reason_error``);
    - ``delta.reasoning`` (vLLM, GLM, llama.cpp) is read as ``reasoning_content``; finish reasons are
      normalised with litellm's table (one it does not know -> ``stop``);
    - 100 identical text chunks in a row end the stream with a failure, as in litellm;
    - usage is gathered over the chunks (a count is kept unless a later one is larger than 0) and
      delivered once, at the end;
    - a chunk's ``prompt_progress`` goes to ``on_progress`` only (``_progress``);
    - a delta passes on only the fields the assembler reads (``_DELTA_FIELDS``): whatever else a server puts
      in it is dropped at once, never queued or kept;
    - the reply's text, thinking and tool calls are kept for a usage estimate as ``Pieces`` (a copy of what
      the assembler holds and counts, so ``retry.provider.maxReplyBytes`` bounds it too).
    """

    def __init__(self, model: str, messages: Sequence[Mapping[str, Any]], estimate: UsageEstimate | None = None,
                 on_progress: Callable[[int, int, int | None], float | None] | None = None) -> None:
        self._model = model
        self._messages = messages
        self._estimate = estimate
        self._on_progress = on_progress
        self._usage = _UsageTotals()
        self._texts = Pieces()
        self._thinking = Pieces()
        self._calls: dict[int, dict[str, str]] = {}
        self._arguments: dict[int, Pieces] = {}
        self._recent: list[Any] = []  # delta.content of the last two non-empty chunks
        self._repeats = 1

    def chunks(self, events: Iterable[SseEvent]) -> Iterator[dict[str, Any]]:
        received = False
        finished = False
        for event in events:
            data, failure = _parse(event.data)
            if failure is not None:
                raise failure
            if not isinstance(data, dict):
                continue
            received = True
            chunk = self._chunk(data)
            finished = finished or any(choice.get("finish_reason") for choice in chunk["choices"])
            yield chunk
        if received and not finished:
            raise stream_failure("Stream ended before a finish_reason was received")
        if received:
            yield {"choices": [], "usage": self._final_usage()}

    def _chunk(self, data: Mapping[str, Any]) -> dict[str, Any]:
        error = data.get("error")
        if error:
            message = error.get("message") if isinstance(error, Mapping) else None
            raise stream_failure(message if isinstance(message, str) and message else _STREAM_ERROR_TEXT)
        listed = data.get("choices")
        raw_choices: list[Any] = listed if isinstance(listed, list) else []
        choices: list[dict[str, Any]] = []
        for raw in raw_choices:
            if not isinstance(raw, Mapping):
                continue
            reason = raw.get("finish_reason")
            if reason == "abort":
                raise stream_failure("Upstream generation aborted (finish_reason=abort)")
            if reason == "error" and raw is raw_choices[0]:
                raise finish_reason_error(json.dumps(data))
            given = raw.get("delta")
            given = given if isinstance(given, Mapping) else {}
            delta = {key: given[key] for key in _DELTA_FIELDS if key in given}
            if "reasoning" in given:
                delta["reasoning_content"] = given["reasoning"]
            choice = {"index": raw.get("index", 0), "delta": delta,
                      "finish_reason": map_finish_reason(reason) if isinstance(reason, str) and reason else None}
            if not choices:
                self._check_repetition(delta)
            choices.append(choice)
            if choice["index"] == 0:
                self._remember(delta)
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            self._usage.add(usage)
        reading = self._progress(data.get("prompt_progress"))
        if reading is not None:
            return {"choices": choices, READING_KEY: reading}
        return {"choices": choices}

    def _progress(self, report: Any) -> float | None:
        """llama.cpp's ``prompt_progress`` (asked for with ``return_progress``): how much of the prompt
        it has read, passed to ``on_progress`` as (processed, total, time_ms); litellm drops it, as the chunks do.
        None without such a report; else how many seconds the next report may take (what ``on_progress``
        answers; 0 when not known yet): the stream loop counts the report as the server being alive, and
        waits for the next accordingly."""
        if self._on_progress is None or not isinstance(report, Mapping):
            return None
        processed, total = _count(report.get("processed")), _count(report.get("total"))
        if processed is None or not total:
            return None
        wait = self._on_progress(processed, total, _count(report.get("time_ms")))
        return float(wait) if isinstance(wait, (int, float)) and wait > 0 else 0.0

    def _check_repetition(self, delta: Mapping[str, Any]) -> None:
        """litellm stops a model that sends the same text chunk (over 2 characters) again and again."""
        content = delta.get("content")
        non_empty = (isinstance(content, str) and content) or delta.get("tool_calls") or (
            delta.get("reasoning_content") is not None)
        if not non_empty:
            return
        if len(self._recent) == 2:
            last, before = self._recent[1], self._recent[0]
            if not isinstance(last, str) or len(last) <= 2:
                self._repeats = 1
            else:
                self._repeats = self._repeats + 1 if last == before else 1
                if self._repeats >= _REPEAT_LIMIT:
                    raise stream_failure(f"The model is repeating the same chunk = {last}.")
        self._recent = [*self._recent[-1:], content]

    def _remember(self, delta: Mapping[str, Any]) -> None:
        """Keep what the reply said, in case its token counts must be estimated."""
        if isinstance(delta.get("content"), str):
            self._texts.add(delta["content"])
        if isinstance(delta.get("reasoning_content"), str):
            self._thinking.add(delta["reasoning_content"])
        calls = delta.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(call, Mapping):
                continue
            given = call.get("index")
            index = given if isinstance(given, int) else position
            entry = self._calls.get(index)
            if entry is None:
                entry = self._calls[index] = {"id": "", "name": ""}
                self._arguments[index] = Pieces()
            found = call.get("function")
            function: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            for key, value in (("id", call.get("id")), ("name", function.get("name"))):
                if value:
                    entry[key] = str(value)
            if isinstance(function.get("arguments"), str):
                self._arguments[index].add(function["arguments"])

    def _final_usage(self) -> dict[str, Any]:
        usage = self._usage
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        if (prompt is None or completion is None) and self._estimate is not None:
            calls = [{**self._calls[i], "arguments": self._arguments[i].text()} for i in sorted(self._calls)]
            estimated_prompt, estimated_completion = self._estimate(
                self._model, [without_null_content(m) for m in self._messages], self._texts.text(),
                self._thinking.text(), calls,
            )
            prompt = estimated_prompt if prompt is None else prompt
            completion = estimated_completion if completion is None else completion
        prompt, completion = prompt or 0, completion or 0
        result: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                  "total_tokens": prompt + completion}
        if usage.details is not None:
            result["prompt_tokens_details"] = usage.details
        if usage.cache_read is not None:
            result["cache_read_input_tokens"] = usage.cache_read
        if usage.cache_write is not None:
            result["cache_creation_input_tokens"] = usage.cache_write
        return result


class _UsageTotals:
    """Token counts over the chunks, combined as litellm combines them."""

    def __init__(self) -> None:
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cache_read: int | None = None
        self.cache_write: int | None = None
        self.details: dict[str, Any] | None = None

    def add(self, usage: Mapping[str, Any]) -> None:
        # A usage object always has both counts for litellm (the OpenAI SDK fills a missing one with 0).
        prompt = _count(usage.get("prompt_tokens")) or 0
        completion = _count(usage.get("completion_tokens")) or 0
        if prompt is not None and (prompt > 0 or self.prompt_tokens is None):
            self.prompt_tokens = prompt
        if completion is not None and (completion > 0 or self.completion_tokens is None):
            self.completion_tokens = completion
        details = usage.get("prompt_tokens_details")
        if isinstance(details, Mapping):
            self.details = dict(details)
        prompt_side = bool(prompt) or bool(_count(usage.get("cache_read_input_tokens"))) or bool(
            _count(usage.get("cache_creation_input_tokens")))
        read, write = _count(usage.get("cache_read_input_tokens")), _count(usage.get("cache_creation_input_tokens"))
        if read is not None and (prompt_side or self.cache_read is None):
            self.cache_read = read
        if write is not None and (prompt_side or self.cache_write is None):
            self.cache_write = write


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parse(text: str) -> tuple[Any, FailureRaised | None]:
    """The event's JSON, or the failure litellm reports for text that is not JSON."""
    try:
        return json.loads(text), None
    except RecursionError:
        return None, stream_failure("an event is nested too deeply to read")
    except ValueError as error:
        return None, stream_failure(str(error))
