"""How a summary is made: which engines a compaction tries, in what order (``compaction.engine``).

An engine turns a compaction plan into a ``CompactionResult`` (a readable ``summary`` pi can read, and
``details``). ``local`` (``engine_local``) is pi-compact's own request, with the model-free summary behind it.
A provider's own compaction is one sibling module per mechanism (``engine_anthropic``, ``engine_openai``),
chosen by the model's ``ModelInfo.server_compaction`` (a field of its provider row or ``models.json`` model).

``choose`` orders them and says why the first leads (``chain``: the order alone; ``described``: the first as
``compact --dry-run`` names it): "local" never asks the provider; "provider" asks it first wherever the model has it;
"auto" asks it only where it is expected to cost no more than ``local`` (input-token units, as
``prefix_cost``). An engine that cannot serve (``Refused``: no feature, a refused request, an empty block, a
dropped stream) hands over to the next, and ``details.engineFallbacks`` says why; ``local`` is always last.
A cancel is never a refusal: it ends the compaction with nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_compact.agent.compaction.engine_anthropic import AnthropicEngine
from pi_compact.agent.compaction.engine_local import LOCAL, Engine, EngineContext, LocalEngine, Refused, noted
from pi_compact.agent.compaction.engine_openai import OpenAIEngine
from pi_compact.cancel import CancelToken
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.providers import ANTHROPIC_COMPACTION, OPENAI_COMPACTION

# The engine of each compaction mechanism a provider row may name (``providers.server_compaction``).
PROVIDER_ENGINES: dict[str, type[AnthropicEngine] | type[OpenAIEngine]] = {
    ANTHROPIC_COMPACTION: AnthropicEngine,
    OPENAI_COMPACTION: OpenAIEngine,
}


def provider_engine(mechanism: str | None) -> Engine | None:
    """The engine of a provider's compaction mechanism (``ModelInfo.server_compaction``), or None."""
    engine = PROVIDER_ENGINES.get(mechanism or "")
    return engine() if engine is not None else None


@dataclass(frozen=True)
class Chosen:
    """The engines to try, in order (``local`` last), and why the first one leads (one sentence)."""

    engines: list[Engine]
    why: str


def choose(ctx: EngineContext, setting: str) -> Chosen:
    """The engines for ``compaction.engine`` = ``setting`` and why. A provider engine passed over where
    "provider" asked for it is noted in ``ctx.notes``."""
    local = LocalEngine()
    if setting == LOCAL:
        return Chosen([local], "compaction.engine is local.")
    info = ctx.compactor.model.info
    provider = provider_engine(info.server_compaction)
    if provider is None:
        why = f"{info.model} has no server-side compaction."
        if setting == "provider":
            ctx.notes.append({"engine": "provider", "reason": why})
        return Chosen([local], why)
    unavailable = provider.unavailable(ctx)
    if unavailable is not None:
        if setting == "provider":
            ctx.notes.append({"engine": provider.name, "reason": unavailable})
        return Chosen([local], f"the provider's compaction cannot serve: {unavailable}")
    if setting == "provider":
        return Chosen([provider, local], "compaction.engine is provider.")
    theirs, ours = provider.expected(ctx), local.expected(ctx)
    figures = f"~{theirs:,.0f} input-token units expected against ~{ours:,.0f} for ours"
    if theirs <= ours:
        return Chosen([provider, local], f"auto: the provider's is expected to cost no more ({figures}).")
    return Chosen([local], f"auto: ours is expected to cost less ({figures}).")


def chain(ctx: EngineContext, setting: str) -> list[Engine]:
    """The engines to try, in order, for ``compaction.engine`` = ``setting`` (``local`` always last)."""
    return choose(ctx, setting).engines


def described(ctx: EngineContext, chosen: Chosen) -> str:
    """The engine that would run first, as the dry run names it: ``provider (anthropic-compact-20260112)``,
    ``prefix`` or ``serialized`` (the local engine's way), with why."""
    first = chosen.engines[0]
    if isinstance(first, LocalEngine):
        choice = first.choice(ctx)
        always = ctx.compactor.settings.compaction.reuse_prefix == "always"
        name = "prefix" if choice is not None and (always or choice.cheaper is not None) else "serialized"
    else:
        name = f"provider ({first.name})"
    return f"{name} — {chosen.why}"


def run(ctx: EngineContext, cancel: CancelToken) -> CompactionResult:
    """The first summary an engine of ``chain`` makes; ``details.engine`` names it, ``details.engineFallbacks``
    lists those that refused before it (and an engine's own notes, such as a window it could not add)."""
    engines = chain(ctx, ctx.compactor.settings.compaction.engine)
    for engine in engines:
        try:
            result = engine.summarize(ctx, cancel)
        except Refused as exc:
            if engine is engines[-1]:
                raise
            ctx.notes.append({"engine": engine.name, "reason": str(exc)})
            continue
        own = result.details.get("engineFallbacks")
        notes = [*ctx.notes, *(own if isinstance(own, list) else [])]
        extra: dict[str, Any] = {"engine": result.details.get("engine", engine.name)}
        if notes:
            extra["engineFallbacks"] = notes
        return noted(result, extra)
    raise AssertionError("the local engine is always last")  # (chain never returns an empty list)


def expected_cost(ctx: EngineContext) -> float:
    """What the engine ``chain`` puts first is expected to cost (input-token units)."""
    return chain(ctx, ctx.compactor.settings.compaction.engine)[0].expected(ctx)


def noted_local(result: CompactionResult) -> CompactionResult:
    """A summary made ahead of time by the local engine (``background``), noted as every engine's is."""
    return noted(result, {"engine": result.details.get("engine", LOCAL)})


__all__ = ["PROVIDER_ENGINES", "Chosen", "EngineContext", "chain", "choose", "described", "expected_cost",
           "noted_local", "provider_engine", "run"]
