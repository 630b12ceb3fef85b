"""A summary asked on top of the last chat request's prefix (``compaction.reusePrefix``); pure.

The provider has just read the last chat request and keeps its prefix (Anthropic from the cache
breakpoints, OpenAI and Gemini implicitly, llama.cpp in its slot). A summary asked as a continuation
of that prefix (the same system prompt, tools and thinking settings, the messages before the cut
exactly as they were sent, then one user message with the instruction) is read from that cache
instead of being paid and read again as a serialized ``<conversation>``.

``reusable_prefix`` finds that prefix for a plan, or None when the last request does not start with
the messages before the cut; ``PrefixShape`` builds the requests. The cache holds only what a request
marked: ``PrefixShape.held_at`` names the leading messages an earlier request wrote there, and the
summary requests then carry a breakpoint at their end to read them (``ChatRequest.cache_cut``).
``prompt_sizes`` estimates what each way sends, for the choice by expected dollars (``agent.compaction``).
Only the request's shape differs: what the answer must hold and how it is checked are ``summarize``'s, as
for the serialized way, and the instruction texts are ``prompts``' (``history_instruction``,
``turn_instruction``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.prompts import (
    SYSTEM_PROMPT,
    history_instruction,
    history_request_text,
    turn_instruction,
    turn_prefix_request_text,
)
from pi_compact.compaction.serialize import FILE_READ_MAX_CHARS, serialize_message
from pi_compact.compaction.tokens import estimate_text_tokens, estimate_tokens_auto
from pi_compact.llm.protocol import ChatRequest, fixed_text
from pi_compact.messages import Message, convert_to_llm, user_text_message

# A turn prefix this small (one short message) is kept as it is: no three-section summary is shorter, so
# it is asked for neither way.
VERBATIM_PREFIX_TOKENS = 64


@dataclass(frozen=True)
class PrefixShape:
    """The last chat request and the two prefixes of it a compaction may ask on top of."""

    request: ChatRequest
    history: tuple[Message, ...]  # the messages before the summarized part ends (a split turn's start)
    turn: tuple[Message, ...]  # the messages before the cut (the same as ``history`` unless the turn is split)
    # Counts of leading messages the provider holds in its cache: each summary request marks the longest
    # that its prefix starts with (a fourth breakpoint), so it reads it.
    held: tuple[int, ...] = ()

    def held_at(self, counts: Sequence[int]) -> PrefixShape:
        """This shape with the summary requests reading the held prefixes of these message ``counts``."""
        return replace(self, held=tuple(sorted({n for n in counts if 0 < n <= len(self.turn)})))

    def held_in(self, prefix: Sequence[Message]) -> int | None:
        """The longest held prefix a request on ``prefix`` starts with (None: none)."""
        return max((n for n in self.held if n <= len(prefix)), default=None)

    def ask(self, prefix: Sequence[Message], text: str, max_tokens: int) -> ChatRequest:
        """The summary request: ``prefix`` as sent, then ``text`` as one user message; the rest of the
        request (system prompt, tools, thinking, cache retention, session id) as the chat request's, and a
        breakpoint after the held messages so the request reads what an earlier one wrote."""
        message = user_text_message(text, prefix[-1].get("timestamp", 0) if prefix else 0)
        # With thinking on, the output cap and the thinking budget are exactly the chat request's (its plan's,
        # or left to the model layer as the chat request left them): a different thinking budget would make
        # Anthropic drop the cached messages (only the system prompt and tools survive a change of them).
        thinking = self.request.thinking_level not in (None, "off")
        return replace(self.request, messages=[*prefix, message], cache_cut=self.held_in(prefix), transient_tail=0,
                       max_tokens=self.request.max_tokens if thinking else max_tokens,
                       thinking_inside=self.request.thinking_inside and thinking)

    def fits(self, prefix: Sequence[Message], text: str, max_tokens: int, context_window: int) -> bool:
        """Does a request on ``prefix`` leave ``max_tokens`` for the answer (with thinking on, the chat
        request's own cap, which the summary request carries too)? (The chat request with more messages than
        the prefix fitted, but it may have asked for fewer output tokens.)"""
        thinking = self.request.thinking_level not in (None, "off")
        if thinking and self.request.max_tokens is not None:
            max_tokens = self.request.max_tokens
        return self.prompt_tokens(prefix, text) + max_tokens <= context_window

    def prompt_tokens(self, prefix: Sequence[Message], text: str = "") -> int:
        """The estimated prompt of a request on ``prefix`` with ``text`` after it."""
        # The system prompt and tools estimated as the agent counts them in a context's size.
        fixed = fixed_text(self.request.system, self.request.tools)
        return sum(estimate_tokens_auto(m) for m in (user_text_message(fixed), *prefix, user_text_message(text)))


@dataclass(frozen=True)
class PromptSizes:
    """Estimated prompt tokens of the summary requests of one plan, each way (a split turn asks twice)."""

    prefix: tuple[int, ...]  # on the chat prefix: the history request, then the turn request
    held: tuple[int, ...]  # of each prefix request, the part read from the cache (its held messages and before)
    serialized: tuple[int, ...]  # the serialized requests (system prompt, conversation, instruction)


def prompt_sizes(shape: PrefixShape, plan: CompactionPlan, instructions: str | None) -> PromptSizes:
    """What each way would send for ``plan``: estimated, not counted (the choice needs proportions)."""
    update = plan.previous_summary is not None
    asked = [(shape.history, history_instruction(update, instructions))] if plan.messages_to_summarize else []
    if _asks_turn(plan):
        asked.append((shape.turn, turn_instruction(instructions)))
    prefix = tuple(shape.prompt_tokens(messages, text) for messages, text in asked)
    held = tuple(shape.prompt_tokens(messages[:count]) if (count := shape.held_in(messages)) else 0
                 for messages, _ in asked)
    return PromptSizes(prefix, held, serialized_sizes(plan, instructions))


def serialized_sizes(plan: CompactionPlan, instructions: str | None) -> tuple[int, ...]:
    """The estimated prompts of ``plan``'s serialized summary requests (the history, a split turn's start)."""
    sizes = [_text_tokens(SYSTEM_PROMPT, history_request_text(
        _conversation(plan.messages_to_summarize), plan.previous_summary, instructions))] \
        if plan.messages_to_summarize else []
    if _asks_turn(plan):
        sizes.append(_text_tokens(SYSTEM_PROMPT, turn_prefix_request_text(
            _conversation(plan.turn_prefix_messages), instructions)))
    return tuple(sizes)


def _asks_turn(plan: CompactionPlan) -> bool:
    """Is a split turn's start asked about (not kept word for word as too small to summarize)?"""
    return bool(plan.turn_prefix_messages) and \
        estimate_text_tokens(_conversation(plan.turn_prefix_messages)) > VERBATIM_PREFIX_TOKENS


def _conversation(messages: Sequence[Message]) -> str:
    """The conversation as a serialized request carries it (file reads cut short, as ``summarize`` does)."""
    return "\n\n".join(part for m in convert_to_llm(messages)
                        for part in serialize_message(m, FILE_READ_MAX_CHARS, for_summarizer=True))


def _text_tokens(*texts: str) -> int:
    return sum(estimate_text_tokens(text) for text in texts)


def reusable_prefix(
    last: ChatRequest | None, context: Sequence[Message], plan: CompactionPlan,
    to_llm: Callable[[Sequence[Message]], list[Message]],
) -> PrefixShape | None:
    """The prefixes of ``last`` that hold exactly the messages of ``context`` before ``plan``'s cut.

    ``context`` is the live context the plan was made from; ``to_llm`` turns its messages into what a
    request carries, as the chat request did. None when there was no chat request, when the context
    does not end with the plan's kept part, or when the request did not start with those messages (a
    different branch, an edit, a compaction since): a summary on another prefix would read nothing
    from the cache and could summarize the wrong messages.
    """
    if last is None:
        return None
    kept, turn_prefix = list(plan.kept_messages), list(plan.turn_prefix_messages)
    cut = len(context) - len(kept)
    start = cut - len(turn_prefix)
    if start < 0 or list(context[cut:]) != kept or list(context[start:cut]) != turn_prefix:
        return None
    history, turn = to_llm(context[:start]), to_llm(context[:cut])
    sent = list(last.messages)
    if not turn or sent[: len(turn)] != turn:
        return None
    return PrefixShape(last, tuple(history), tuple(turn))


__all__ = ["VERBATIM_PREFIX_TOKENS", "PrefixShape", "PromptSizes", "prompt_sizes", "reusable_prefix",
           "serialized_sizes"]
