"""A summary asked on top of the last chat request's prefix (``compaction.reusePrefix``); pure.

The provider has just read the last chat request and keeps its prefix (Anthropic from the cache
breakpoints, OpenAI and Gemini implicitly, llama.cpp in its slot). A summary asked as a continuation
of that prefix (the same system prompt, tools and thinking settings, the messages before the cut
exactly as they were sent, then one user message with the instruction) is read from that cache
instead of being paid and read again as a serialized ``<conversation>``.

``reusable_prefix`` finds that prefix for a plan, or None when the last request does not start with
the messages before the cut; ``PrefixShape`` builds the requests. Only the request's shape differs:
what the answer must hold and how it is checked are ``summarize``'s, as for the serialized way, and the
instruction texts are ``prompts``' (``history_instruction``, ``turn_instruction``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.tokens import estimate_tokens_auto
from pi_compact.llm.protocol import ChatRequest, fixed_text
from pi_compact.messages import Message, user_text_message


@dataclass(frozen=True)
class PrefixShape:
    """The last chat request and the two prefixes of it a compaction may ask on top of."""

    request: ChatRequest
    history: tuple[Message, ...]  # the messages before the summarized part ends (a split turn's start)
    turn: tuple[Message, ...]  # the messages before the cut (the same as ``history`` unless the turn is split)

    def ask(self, prefix: Sequence[Message], text: str, max_tokens: int) -> ChatRequest:
        """The summary request: ``prefix`` as sent, then ``text`` as one user message; the rest of the
        request (system prompt, tools, thinking, cache retention, session id) as the chat request's."""
        message = user_text_message(text, prefix[-1].get("timestamp", 0) if prefix else 0)
        # With thinking on, the output cap is left to the model layer, as for the chat request: a
        # different thinking budget would make Anthropic drop the cached messages (only the system
        # prompt and tools survive a change of thinking settings).
        thinking = self.request.thinking_level not in (None, "off")
        return replace(self.request, messages=[*prefix, message], max_tokens=None if thinking else max_tokens)

    def fits(self, prefix: Sequence[Message], text: str, max_tokens: int, context_window: int) -> bool:
        """Does a request on ``prefix`` leave ``max_tokens`` for the answer? (The chat request with more
        messages than the prefix fitted, but it may have asked for fewer output tokens.)"""
        # The system prompt and tools estimated as the agent counts them in a context's size.
        fixed = fixed_text(self.request.system, self.request.tools)
        size = sum(estimate_tokens_auto(m) for m in (user_text_message(fixed), *prefix, user_text_message(text)))
        return size + max_tokens <= context_window


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


__all__ = ["PrefixShape", "reusable_prefix"]
