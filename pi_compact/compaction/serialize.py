"""The conversation as plain text for the summarizer (pi's serializeConversation, pure).

Each message becomes ``[User]:`` / ``[Assistant thinking]:`` / ``[Assistant]:`` /
``[Assistant tool calls]:`` / ``[Tool result]:`` blocks joined by blank lines. Tool results are cut
to 2000 characters (JavaScript characters, i.e. UTF-16 code units) with a marker saying how many
were dropped, because one huge tool output must not crowd out the rest of the history.

The summarizer itself gets the results of file reads cut shorter (``FILE_READ_MAX_CHARS``): a file's
body can be read again from disk (and automatic recall brings the original back), so in the summary
request it is mostly cost and noise; which files were read is still listed. It also gets a failed tool
call's result marked ``[Tool result (failed)]:`` (pi marks nothing, so a small summarizer recorded a
failed edit as done). And it gets a long successful result of any other tool (a test run that passed,
a listing) as its first and last lines with a count of the lines left out (``condense_output``): what
such output says is in its head and its tally; a failed result keeps its 2000 characters, since its
message is what the summary must quote. ``serialize_conversation`` keeps pi's text exactly, for
previews and the pi comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pi_compact.jstext import js_json, js_key_order, js_len, js_slice
from pi_compact.messages import Message, text_of

TOOL_RESULT_MAX_CHARS = 2000
FAILED_RESULT_TAG = "[Tool result (failed)]:"
# A file's first few lines: enough to tell what it is (the file can be read again, and automatic recall brings
# the original back). Issue 41, measured on its five trained transcripts with the 1.5B model: cutting reads
# from 500 to 200 characters and other long successful output from 6 + 6 to 3 + 3 lines made the summary
# request 25 % shorter, and the model's own answer kept more of the facts it is asked for, not fewer
# (benchmarks/README.md, "change 3").
FILE_READ_MAX_CHARS = 200
# A successful result of another tool longer than HEAD + TAIL + 1 lines keeps its first HEAD and last TAIL
# lines for the summarizer: a command's first lines say what it is, its last lines its tally.
OUTPUT_HEAD_LINES = 3
OUTPUT_TAIL_LINES = 3
# Tools whose result is the content of a file on disk (pi's and ours).
FILE_READ_TOOLS = frozenset({"read"})


def truncate_tool_result(text: str, limit: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Keep the first ``limit`` characters and say how many more there were."""
    length = js_len(text)
    if length <= limit:
        return text
    return f"{js_slice(text, limit)}\n\n[... {length - limit} more characters truncated]"


def condense_output(text: str, head: int = OUTPUT_HEAD_LINES, tail: int = OUTPUT_TAIL_LINES) -> str:
    """``text``'s first ``head`` and last ``tail`` lines with a count of the lines between them, when
    that leaves out more than one line; ``text`` itself otherwise."""
    lines = text.split("\n")
    left_out = len(lines) - head - tail
    if left_out <= 1:
        return text
    return "\n".join([*lines[:head], f"[... {left_out} lines left out]", *lines[len(lines) - tail:]])


def format_tool_call(block: Mapping[str, Any]) -> str:
    """``name(key=<json>, ...)`` with the arguments in their recorded order."""
    arguments = block.get("arguments")
    if isinstance(arguments, (dict, Mapping)):  # dict first: it skips the slow ABC check
        rendered = ", ".join([f"{key}={js_json(arguments[key])}" for key in js_key_order(arguments)])
    else:
        rendered = ""
    return f"{block.get('name', '')}({rendered})"


def serialize_message(
    message: Message, file_read_limit: int = TOOL_RESULT_MAX_CHARS, *, for_summarizer: bool = False,
) -> list[str]:
    """The text blocks one LLM message contributes (possibly none).

    ``file_read_limit``: where the result of a file read is cut (other tool results: at 2000).
    ``for_summarizer``: the summarizer's text (pi's has neither): tag a failed tool result (``isError``) as
    failed, and condense a long successful result of a tool other than a file read (``condense_output``).
    """
    role = message.get("role")
    if role == "user":
        text = text_of(message.get("content"))
        return [f"[User]: {text}"] if text else []
    if role == "assistant":
        thinking: list[str] = []
        texts: list[str] = []
        calls: list[str] = []
        for block in message.get("content") or ():
            if not isinstance(block, (dict, Mapping)):
                continue
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text") or ""))
            elif kind == "thinking":
                thinking.append(str(block.get("thinking") or ""))
            elif kind == "toolCall":
                calls.append(format_tool_call(block))
        parts = []
        if thinking:
            parts.append("[Assistant thinking]: " + "\n".join(thinking))
        if texts:
            parts.append("[Assistant]: " + "\n".join(texts))
        if calls:
            parts.append("[Assistant tool calls]: " + "; ".join(calls))
        return parts
    if role == "toolResult":
        text = text_of(message.get("content"))
        file_read = message.get("toolName") in FILE_READ_TOOLS
        limit = file_read_limit if file_read else TOOL_RESULT_MAX_CHARS
        failed = bool(message.get("isError"))
        tag = FAILED_RESULT_TAG if for_summarizer and failed else "[Tool result]:"
        if for_summarizer and not failed and not file_read:
            text = condense_output(text)
        return [f"{tag} {truncate_tool_result(text, min(limit, TOOL_RESULT_MAX_CHARS))}"] if text else []
    return []


def message_text(message: Message) -> str:
    """The blocks of one LLM message, separated by blank lines ('' when it contributes none)."""
    return "\n\n".join(serialize_message(message))


def conversation_chunks(texts: Iterable[str], chunk_chars: int = 1 << 16) -> Iterator[str]:
    """The non-empty message texts joined by blank lines, in pieces of roughly ``chunk_chars``.

    The pieces concatenate to ``serialize_conversation``'s text; a history of many MB can so be
    written out without first being built as one string. (Pieces of a MB or more would be slower:
    memory of that size comes fresh from the system each time, page by page.)
    """
    batch: list[str] = []
    size = 0
    lead = ""  # goes in front of every piece but the first
    for text in texts:
        if not text:
            continue
        batch.append(text)
        size += len(text)
        if size >= chunk_chars:
            yield lead + "\n\n".join(batch)
            lead = "\n\n"
            batch, size = [], 0
    if batch:
        yield lead + "\n\n".join(batch)


def serialize_conversation(messages: Iterable[Message]) -> str:
    """All blocks of already-converted LLM messages, separated by blank lines."""
    return "".join(conversation_chunks(map(message_text, messages)))
