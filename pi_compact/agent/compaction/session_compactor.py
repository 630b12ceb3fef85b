"""The one way a session's ``Compactor`` is put together: the terminal's (``coordinator``), headless
``compact FILE`` and its dry run (``offline``) all call ``build_compactor``, so they measure alike, read the
same last chat request and so choose the same engines (``engines.choose``).

A run with no chat request sent yet (a resume, ``compact FILE``) asks its summary on the request the next
turn would send, whose prefix the provider may still hold from the last run; after this run sent one, on
that one (after a model switch, on none: the new model holds nothing).
"""

from __future__ import annotations

from collections.abc import Callable

from pi_compact.agent.compaction.guard import LoopGuard
from pi_compact.agent.compaction.live_context import LiveContext
from pi_compact.agent.compaction.pipeline import CompactionHooks, Compactor
from pi_compact.agent.compaction.summarizer import Summarizer
from pi_compact.agent.events import SessionEvent
from pi_compact.agent.request import Requests
from pi_compact.compaction.window import WindowPlan
from pi_compact.llm.protocol import ChatModel, ChatRequest
from pi_compact.session.store import SessionStore


def build_compactor(
    store: SessionStore, context: LiveContext, requests: Requests, model: ChatModel, plan: WindowPlan,
    emit: Callable[[SessionEvent], None], *, now_ms: Callable[[], int], summarizer: Summarizer | None,
    hooks: CompactionHooks | None = None, guard: LoopGuard | None = None,
    diagnose: Callable[[], str] | None = None, overflow_hint: bool = True, allow_fallback: bool = True,
) -> Compactor:
    """The compactor of ``store``'s session on ``model`` under ``plan`` (the budgets in force): figures counted
    as the live context counts them, the summary asked on the last (or next) chat request's prefix."""

    def last_request() -> ChatRequest | None:
        if requests.last is not None:
            return requests.last
        return None if requests.sent_any else requests.peek(context.sent(), plan)

    return Compactor(store, model, plan.settings, emit, hooks, now_ms=now_ms, allow_fallback=allow_fallback,
                     guard=guard, overflow_hint=overflow_hint, diagnose=diagnose, summarizer=summarizer,
                     thinking=plan.level,
                     measure=lambda messages: context.size_of(messages, model),
                     measure_sent=lambda messages: context.size_of(messages, model, plan),
                     size_now=lambda: context.usage_for(model, plan).tokens,
                     estimator=context.estimator_of(model), last_request=last_request,
                     sent=lambda: tuple(requests.sent), plan=plan, request_digest=requests.digest)


__all__ = ["build_compactor"]
