"""Anthropic's server-side compaction as an engine (``providers.ANTHROPIC_COMPACTION``: the ``compact_20260112`` edit).

The request is the one the prefix way of ``local`` would send (the last chat request's messages before the
cut, as sent, so it reads them from the prompt cache, then our summary instruction), declaring the edit with
the API's lowest trigger, ``pause_after_compaction`` and our summary structure as ``instructions``. The answer
is the ``compaction`` block (``llm.server_compaction``); the entry's ``summary`` is its readable content plus
what a summary keeps by construction (``compaction.kept``), and ``details.providerCompaction`` keeps the block
verbatim with those kept blocks, so this model is later sent the block (cache-marked) followed by them, and every
other model, and pi, the text.

A refused request, an answer without a block, a block with null or empty content or a stream cut before the
block ended is ``Refused``: the next engine (ours) writes the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pi_compact.agent.compaction.engine_local import EngineContext, Refused
from pi_compact.agent.compaction.summarizer import UsageMeter
from pi_compact.agent.events import Retry
from pi_compact.cancel import CancelToken
from pi_compact.compaction.kept import keep, with_blocks
from pi_compact.compaction.prompts import history_instruction
from pi_compact.compaction.summarize import CompactionResult, estimated_tokens_after
from pi_compact.errors import Cancelled
from pi_compact.llm.protocol import ChatRequest, Retrying, complete
from pi_compact.llm.retry_watch import RetryWatcher
from pi_compact.llm.server_compaction import MIN_TRIGGER, REPLY_KEY, CompactionEdit, carrier
from pi_compact.messages import PROVIDER_COMPACTION_KEY
from pi_compact.providers import ANTHROPIC_COMPACTION

NAME = ANTHROPIC_COMPACTION  # ``details.engine``: the mechanism, as the provider row names it
# pi's summary answer size: 80 % of the reserve (the block is the compaction pass's output).
SUMMARY_SHARE = 0.8


class AnthropicEngine:
    """The ``compact_20260112`` edit on the chat model's cached prefix."""

    name = NAME

    def unavailable(self, ctx: EngineContext) -> str | None:
        unfit = ctx.provider_unfit()
        if unfit is not None:
            return unfit
        tokens = self._prompt_tokens(ctx)
        if tokens < MIN_TRIGGER:
            return f"the part to summarize (~{tokens:,} tokens) is under the API's {MIN_TRIGGER:,}-token trigger."
        return None

    def expected(self, ctx: EngineContext) -> float:
        """The request on the prefix: its held part read from the cache, the rest written (it is marked)."""
        return ctx.prefix_request_cost(self._instruction(ctx))

    def request(self, ctx: EngineContext) -> ChatRequest:
        """The compaction request (the prefix way's history request over the whole part before the cut)."""
        assert ctx.priced is not None
        shape = ctx.priced[0].shape
        text = self._instruction(ctx)
        max_tokens = max(1024, int(SUMMARY_SHARE * ctx.compactor.settings.compaction.reserve_tokens))
        return replace(shape.ask(shape.turn, text, max_tokens),
                       compaction=CompactionEdit(MIN_TRIGGER, pause_after=True, instructions=text))

    def summarize(self, ctx: EngineContext, cancel: CancelToken) -> CompactionResult:
        why = self.unavailable(ctx)
        if why is not None:
            raise Refused(why)
        compactor, plan = ctx.compactor, ctx.plan
        info = compactor.model.info
        meter = UsageMeter(compactor.model)
        reply = complete(RetryWatcher(meter, lambda retry: _report(ctx, retry)), self.request(ctx), cancel)
        if cancel.cancelled or reply.get("stopReason") == "aborted":
            raise Cancelled("Compaction cancelled; nothing was written.")
        if reply.get("stopReason") == "error":
            raise Refused(f"the provider's compaction failed: {reply.get('errorMessage') or 'no reason given'}")
        block = reply.get(REPLY_KEY)
        if not isinstance(block, Mapping):
            raise Refused("the provider answered without a compaction block.")
        content = block.get("content")
        if not isinstance(content, str) or not content.strip():
            raise Refused("the provider's compaction block had no summary (null content).")
        kept = keep(plan, info.context_window)
        summary = with_blocks(content.strip(), kept)
        after = summary[len(content.strip()):].strip()  # our kept blocks: this model reads them after its block
        details = {**kept.details(), "summaryModel": info.model, "usage": meter.usage,
                   PROVIDER_COMPACTION_KEY: carrier(info.provider, info.api, info.model_id, block, after)}
        return CompactionResult(summary, plan.first_kept_entry_id, plan.tokens_before, details, "model",
                                estimated_tokens_after(summary, plan.kept_messages))

    def _instruction(self, ctx: EngineContext) -> str:
        return history_instruction(ctx.plan.previous_summary is not None, ctx.instructions)

    def _prompt_tokens(self, ctx: EngineContext) -> int:
        assert ctx.priced is not None
        shape = ctx.priced[0].shape
        return shape.prompt_tokens(shape.turn, self._instruction(ctx))


def _report(ctx: EngineContext, retry: Retrying) -> None:
    ctx.compactor.emit(Retry.of(retry))


__all__ = ["NAME", "AnthropicEngine"]
