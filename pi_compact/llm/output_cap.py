"""The output cap of a chat request: pi's, lowered so that the prompt and the cap fit the window (pure).

pi asks for ``min(model max output, 32,000) + thinking budget`` tokens whatever the prompt's size, so
near the window Anthropic refuses the request (``input length and `max_tokens` exceed context
limit``) from 159,809 prompt tokens on, below pi's own compaction threshold. ``output_cap`` starts
from the same number and lowers it to what the window leaves after the prompt estimate (with a safety
margin). A session plans one cap and budget for all its chat requests (``compaction.window``) and sends
them as the request's own ``max_tokens`` (thinking inside), so this sizing serves requests without a plan
(a model still resolving, a summary's own size) and the refit after a refusal; the thinking budget shrinks
only as a last resort, so there is always room for an answer after thinking.
``prompt_estimate`` is what a request will cost in prompt tokens: the last reply's reported usage
plus chars/4 of what came after it (pi's estimate), or chars/4 of everything when nothing was reported.
When the estimate was too low anyway, Anthropic's refusal states the true prompt size, and
``refit_cap`` gives the cap that fits it (the adapter retries once with it instead of compacting).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.llm.protocol import ChatRequest, ModelInfo
from pi_compact.messages import Message, to_llm_message

CHAT_CEILING = 32_000  # pi's cap for chat output before the thinking budget
MIN_ANSWER = 1024  # room always left for the answer after the thinking
MIN_BUDGET = 1024  # Anthropic refuses smaller thinking budgets
IMAGE_TOKENS = 1200  # pi's estimate for an image (4,800 characters)
_MARGIN_SHARE = 0.02  # of the window: the estimate is chars/4 and tokenizers differ
_MARGIN_MIN = 256
_LLM_ROLES = frozenset({"user", "assistant", "toolResult"})
# Refusals that state the true prompt size and the window: (pattern, group of the prompt, of the window).
# Refusals that state the true prompt size, the output asked for and the window: (pattern, group of the
# prompt, of the output, of the window).
_REFUSALS: tuple[tuple[re.Pattern[str], int, int, int], ...] = (
    (re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)"), 1, 2, 3),  # Anthropic
    # OpenAI, vLLM: "maximum context length is 32768 tokens. However, you requested 40000 tokens (30000 in the
    # messages, 10000 in the completion)".
    (re.compile(r"maximum context length is (\d+) tokens\. However, you requested \d+ tokens \((\d+) in the "
                r"messages, (\d+) in the completion\)", re.IGNORECASE), 2, 3, 1),
)


@dataclass(frozen=True)
class OutputCap:
    """``max_tokens`` to send, the thinking budget inside it (0: no thinking), and whether the window
    made it smaller than pi's number."""

    max_tokens: int
    thinking_budget: int
    lowered: bool


def output_cap(
    *,
    max_output: int | None,
    context_window: int,
    prompt_tokens: int,
    thinking_budget: int = 0,
    ceiling: int = CHAT_CEILING,
    min_budget: int = MIN_BUDGET,
) -> OutputCap:
    """``min(max_output or ceiling, ceiling) + thinking_budget``, at most ``max_output`` (the API's
    limit), lowered so ``prompt_tokens`` + margin + cap stays inside ``context_window``.

    It never goes below ``MIN_ANSWER`` (a prompt that leaves less overflows either way, and the caller
    compacts). The budget keeps ``MIN_ANSWER`` tokens free for the answer; one that would end below
    ``min_budget`` is dropped (the request is sent without thinking).
    """
    base = min(max_output or ceiling, ceiling)
    wanted = base + max(0, thinking_budget)
    if max_output:
        wanted = min(wanted, max_output)
    room = context_window - prompt_tokens - estimate_margin(context_window)
    cap = max(MIN_ANSWER, min(wanted, room))
    budget = min(max(0, thinking_budget), cap - MIN_ANSWER)
    if budget < min_budget:
        budget = 0
    return OutputCap(cap, budget, lowered=room < wanted)


def estimate_margin(context_window: int) -> int:
    """What a request keeps free in the window for the estimate's error (chars/4, tokenizers differ)."""
    return max(_MARGIN_MIN, int(context_window * _MARGIN_SHARE))


def refit_cap(error: str, sent: int | None = None) -> int | None:
    """The cap that fits the window a prompt + output refusal states (Anthropic's "input length and
    `max_tokens` exceed context limit: A + B > C", OpenAI's and vLLM's "you requested N tokens (A in the
    messages, B in the completion)"): C - A less a small margin. None for another error, no room for an
    answer, or a refusal of another output than ``sent`` (the cap this request asked for)."""
    for pattern, prompt_group, output_group, window_group in _REFUSALS:
        match = pattern.search(error)
        if match is None:
            continue
        if sent is not None and int(match.group(output_group)) != sent:
            return None
        room = int(match.group(window_group)) - int(match.group(prompt_group)) - _MARGIN_MIN
        return room if room >= MIN_ANSWER else None
    return None


def prompt_estimate(request: ChatRequest, info: ModelInfo) -> int:
    """Prompt tokens ``request`` will use on ``info``'s model.

    From the newest reply of this model that reported usage, not older than the newest compaction: its
    whole count (input, cache reads and writes, output: the output is part of the next prompt) plus
    chars/4 of the messages after it. Without one: chars/4 of the system prompt, the tools and every message.
    """
    # A reply kept from before a compaction measured a context that no longer exists. It shows by its
    # place: the summary (however converted) comes first in the list but is newer than the kept replies.
    messages = list(request.messages)
    newest_before: list[int] = []
    newest = 0
    for message in messages:
        newest_before.append(newest)
        newest = max(newest, _int(message.get("timestamp")))
    trailing = 0
    for index in range(len(messages) - 1, -1, -1):  # one pass back to the newest valid reported usage
        message = messages[index]
        fresh = _int(message.get("timestamp")) >= newest_before[index]
        reported = _reported_tokens(message, info) if fresh else 0
        if reported:
            return reported + trailing
        trailing += _message_tokens(message)
    tools = json.dumps([{"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                        for t in request.tools]) if request.tools else ""
    return _chars(request.system) + _chars(tools) + trailing


def _reported_tokens(message: Mapping[str, Any], info: ModelInfo) -> int:
    if message.get("role") != "assistant" or message.get("stopReason") in ("error", "aborted"):
        return 0
    if not info.is_same_model(message.get("provider"), message.get("model")):
        return 0  # another model's tokenizer and prompt
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return 0
    return sum(_int(usage.get(key)) for key in ("input", "output", "cacheRead", "cacheWrite"))


def _message_tokens(message: Message) -> int:
    if message.get("role") not in _LLM_ROLES:  # agent-only entries (summaries, bash runs) as the model reads them
        converted = to_llm_message(message)
        message = converted if converted is not None else {}
    content = message.get("content")
    if isinstance(content, str):
        return _chars(content)
    total = 0
    for block in content if isinstance(content, Sequence) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            total += _chars(str(block.get("text") or ""))
        elif kind == "thinking":
            total += _chars(str(block.get("thinking") or ""))
        elif kind == "toolCall":
            total += _chars(str(block.get("name") or "") + json.dumps(block.get("arguments") or {}))
        elif kind == "image":
            total += IMAGE_TOKENS
    return total


def _chars(text: str) -> int:
    return (len(text) + 3) // 4


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
