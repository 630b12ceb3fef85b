"""How a summary request is sent and its answer read (the model is a parameter).

``ask_serialized`` sends the history as text to the summarizer's own system prompt; ``answer`` sends
any request and returns the reply's text. A cancel raises ``Cancelled``; a failed request raises
``ModelError`` (``SummarizerOverflow`` when the summarizer's window overflowed), or on a reused chat
prefix ``NotReusable``, as does a tool call there: the serialized way is then tried once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pi_compact.cancel import CancelToken
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.errors import Cancelled, ModelError
from pi_compact.llm.overflow import is_context_overflow
from pi_compact.llm.protocol import ChatModel, ChatRequest, complete


class SummarizerOverflow(ModelError):
    """The summarizer itself reported a context overflow."""


class NotReusable(Exception):
    """The summary asked on the last chat request's prefix cannot be used: the serialized way, once."""


# Answers a summary request; (strict, problems) -> text: the strict reminder, the gate's problems.
Ask = Callable[[bool, Sequence[str]], str]


def ask_serialized(
    model: ChatModel, text: str, max_tokens: int, cancel: CancelToken | None, reasoning: str | None,
    planned_budget: int | None = None,
) -> str:
    """The serialized way: ``text`` (the history and the instruction) to the summarizer's system prompt.
    ``planned_budget``: the conversation's thinking budget, sent inside ``max_tokens`` (its planned cap), as
    its chat requests send them; None: the level's budget comes on top of ``max_tokens`` (pi's rule)."""
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}
    # Not marked for caching: no later request starts with this one (even a retry's text differs), and
    # Anthropic charges 1.25x for writing a cache entry.
    request = ChatRequest(system=SYSTEM_PROMPT, messages=[message], max_tokens=max_tokens, reasoning=reasoning,
                          cache="none", thinking_inside=planned_budget is not None, thinking_budget=planned_budget)
    return answer(model, request, cancel)


def answer(model: ChatModel, request: ChatRequest, cancel: CancelToken | None, reused: bool = False) -> str:
    """The reply's text; on a reused prefix a tool call or a failed request is ``NotReusable``."""
    reply = complete(model, request, cancel)
    if reply.get("stopReason") == "aborted" or (cancel is not None and cancel.cancelled):
        raise Cancelled("Compaction cancelled; nothing was written.")
    if reused and (reply.get("stopReason") == "toolUse"
                   or any(b.get("type") == "toolCall" for b in reply.get("content") or ())):
        raise NotReusable("the model called a tool instead of writing the summary")
    if reply.get("stopReason") == "error":
        error = str(reply.get("errorMessage") or "unknown error")
        if reused:
            raise NotReusable(f"the request failed ({error})")
        # The provider's text as is: whoever reports it says that summarization failed (once).
        if is_context_overflow(reply, model.info.context_window, model.info.overflow_texts):
            raise SummarizerOverflow(error)
        raise ModelError(error)
    return "\n".join(
        str(b.get("text", "")) for b in reply.get("content") or () if b.get("type") == "text"
    ).strip()
