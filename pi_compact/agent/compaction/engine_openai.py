"""OpenAI's ``/responses/compact`` as an engine (``providers.OPENAI_COMPACTION``).

The window OpenAI returns (the user messages and one opaque ``compaction`` item) is bound to the model and
the API key, and nobody can read it: so the entry's ``summary`` is ours (``local``'s, made first), which pi,
other models, ``/tree``, ``/uncompact``, recall and the quality gate read, and ``details.providerCompaction``
keeps the window for this same model and account (``llm.server_compaction.window_carrier``). The compact call
goes on the chat request's prefix before the cut (so it reads it from OpenAI's prompt cache). When it fails the
summary stands alone: ``details.engine`` says "local" and ``engineFallbacks`` why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from pi_compact.agent.compaction.engine_local import LOCAL, EngineContext, LocalEngine, Refused
from pi_compact.cancel import CancelToken
from pi_compact.compaction.prompts import history_instruction
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.errors import Cancelled, PiCompactError
from pi_compact.llm.failures import FailureRaised
from pi_compact.llm.protocol import ChatModel, ChatRequest
from pi_compact.llm.server_compaction import MIN_TRIGGER, CompactionEdit, window_carrier
from pi_compact.messages import PROVIDER_COMPACTION_KEY
from pi_compact.providers import OPENAI_COMPACTION
from pi_compact.usage import add_usage

NAME = OPENAI_COMPACTION  # ``details.engine``: the mechanism, as the provider row names it


class Window(Protocol):
    """What ``/responses/compact`` returned (``llm.openai.compact.CompactedWindow``)."""

    @property
    def items(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def usage(self) -> Mapping[str, Any]: ...

    @property
    def account(self) -> str: ...


def compacting(model: ChatModel) -> Any | None:
    """The adapter under ``model``'s wrappers that has ``compact(request)`` (the Responses client), or None."""
    seen: object = model
    while seen is not None:
        if callable(getattr(seen, "compact", None)):
            return seen
        seen = getattr(seen, "wrapped", None)
    return None


class OpenAIEngine:
    """Our summary, and OpenAI's compacted window beside it for the same model and key."""

    name = NAME

    def unavailable(self, ctx: EngineContext) -> str | None:
        if compacting(ctx.compactor.model) is None:
            return f"{ctx.compactor.model.info.model} is not called through the Responses API, which has " \
                   "/responses/compact."
        return ctx.provider_unfit()

    def expected(self, ctx: EngineContext) -> float:
        """Ours, plus the compact call over the prefix (its cached part at the read price)."""
        return LocalEngine().expected(ctx) + ctx.prefix_request_cost()

    def summarize(self, ctx: EngineContext, cancel: CancelToken) -> CompactionResult:
        why = self.unavailable(ctx)
        if why is not None:
            raise Refused(why)
        ours = LocalEngine().summarize(ctx, cancel)
        if cancel.cancelled:
            raise Cancelled("Compaction cancelled; nothing was written.")
        assert ctx.priced is not None
        shape = ctx.priced[0].shape
        text = history_instruction(ctx.plan.previous_summary is not None, ctx.instructions)
        request: ChatRequest = replace(shape.request, messages=list(shape.turn), transient_tail=0,
                                       compaction=CompactionEdit(MIN_TRIGGER, instructions=text))
        adapter = compacting(ctx.compactor.model)
        assert adapter is not None  # (``unavailable`` said so)
        try:
            window: Window = adapter.compact(request)
        except (FailureRaised, PiCompactError) as exc:
            note = {"engine": NAME, "reason": f"OpenAI's compaction failed: {exc}"}
            return CompactionResult(**{**vars(ours), "details": {**ours.details, "engine": LOCAL,
                                                                 "engineFallbacks": [note]}})
        if cancel.cancelled:
            raise Cancelled("Compaction cancelled; nothing was written.")
        info = ctx.compactor.model.info
        usage = ours.details.get("usage")
        details = {**ours.details, "usage": add_usage(usage, window.usage) if isinstance(usage, Mapping)
                   else dict(window.usage),
                   PROVIDER_COMPACTION_KEY: window_carrier(info.provider, info.api, info.model_id, window.account,
                                                           window.items)}
        return CompactionResult(**{**vars(ours), "details": details})


__all__ = ["NAME", "OpenAIEngine", "compacting"]
