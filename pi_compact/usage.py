"""Token usage and its cost in pi's shape: adding usages up, a session's totals, and how a cost reads.

A usage is pi's ``{input, output, cacheRead, cacheWrite, totalTokens, cost: {input, output, cacheRead,
cacheWrite, total}}`` (what the model adapters write into every assistant message, and what a
compaction records in ``details.usage``). Costs come from litellm's per-token prices; a model the
price table does not know (a local server, a new model) reports cost 0. So a usage with tokens and a
zero cost is *unpriced*: it reads "cost unknown", never "$0.0000" (the embedded local model's calls
are free, and said so).

Values read from session files may be malformed (another program wrote them): anything that is not
a number counts as 0. Pure: no I/O (the zero usage is the model seam's ``empty_usage``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pi_compact.llm.protocol import empty_usage

COUNT_KEYS = ("input", "output", "cacheRead", "cacheWrite")
LOCAL_PROVIDER = "local"  # the embedded model's provider (and model) name in the replies it writes


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _cost_of(usage: Mapping[str, Any]) -> Mapping[str, Any]:
    cost = usage.get("cost")
    return cost if isinstance(cost, Mapping) else {}


def add_usage(total: Mapping[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    """The sum of two usages (a new dict; counts stay whole numbers)."""
    counts = {key: int(_number(total.get(key)) + _number(usage.get(key))) for key in COUNT_KEYS}
    base, extra = _cost_of(total), _cost_of(usage)
    cost = {key: _number(base.get(key)) + _number(extra.get(key)) for key in (*COUNT_KEYS, "total")}
    return {**counts, "totalTokens": sum(counts.values()), "cost": cost}


def usage_count(usage: Mapping[str, Any], key: str) -> int:
    """One count of a usage (``input``, ``output``, ``cacheRead``, ``cacheWrite``), 0 when malformed."""
    return int(_number(usage.get(key)))


def usage_tokens(usage: Mapping[str, Any]) -> int:
    """Every token the usage counts (input, output, cache reads and writes)."""
    return int(sum(_number(usage.get(key)) for key in COUNT_KEYS))


def usage_cost(usage: Mapping[str, Any]) -> float:
    return _number(_cost_of(usage).get("total"))


def is_unpriced(usage: Mapping[str, Any]) -> bool:
    """Tokens were used, but no price was known for them."""
    return usage_tokens(usage) > 0 and usage_cost(usage) <= 0


def dollars(cost: float) -> str:
    """``$0.0031``, ``$12.40``; a cost too small for four decimals reads ``<$0.0001``."""
    if cost <= 0:
        return "$0"
    if cost < 0.00005:
        return "<$0.0001"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


def cost_text(usage: Mapping[str, Any]) -> str:
    """How the cost of one usage reads: dollars, or "cost unknown" when its model has no price."""
    return "cost unknown" if is_unpriced(usage) else dollars(usage_cost(usage))


@dataclass(frozen=True)
class UsageTotals:
    """A session's summed usage: ``calls`` replies and compactions that used tokens, ``unpriced`` of
    them without a known price."""

    usage: Mapping[str, Any]
    calls: int
    unpriced: int
    saved: float = 0.0  # what the cache reads saved (``cache_saving``), summed over the priced calls

    def cache_text(self) -> str:
        """"12,000 read · 3,000 written · saved $0.0324" (the saving only where prices are known)."""
        reads, writes = usage_count(self.usage, "cacheRead"), usage_count(self.usage, "cacheWrite")
        saved = f" · saved {dollars(self.saved)}" if self.saved > 0 else ""
        return f"{reads:,} read · {writes:,} written{saved}"
    free: int = 0  # calls answered by the embedded local model: no price, and none to pay

    @property
    def cost(self) -> float:
        return usage_cost(self.usage)

    def cost_text(self) -> str:
        """"$0.4210", "$0.4210 (some calls unpriced)", or "unknown (...)" when nothing was priced."""
        if self.free and self.free == self.calls:
            return "free (the embedded local model)"
        if self.unpriced and self.unpriced + self.free == self.calls:
            return "unknown (no price is known for the models used)"
        local = f" ({self.free} local model call{'' if self.free == 1 else 's'}, free)" if self.free else ""
        return dollars(self.cost) + (" (some calls unpriced)" if self.unpriced else "") + local


def entry_usage(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The usage an entry records: an assistant message's, or a summary's ``details.usage``."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            usage = message.get("usage")
            return usage if isinstance(usage, Mapping) else None
        return None
    if kind in ("compaction", "branch_summary"):
        details = entry.get("details")
        usage = details.get("usage") if isinstance(details, Mapping) else None
        return usage if isinstance(usage, Mapping) else None
    return None


def cache_saving(usage: Mapping[str, Any]) -> float:
    """What one call's cache reads saved: those tokens at the call's input price, minus what they cost.
    The input price is the call's own (cost.input / input), so 0 for a call with no fresh input or no price."""
    fresh, reads = _number(usage.get("input")), _number(usage.get("cacheRead"))
    cost = _cost_of(usage)
    if fresh <= 0 or reads <= 0 or _number(cost.get("input")) <= 0:
        return 0.0
    return reads * _number(cost.get("input")) / fresh - _number(cost.get("cacheRead"))


def session_totals(entries: Iterable[Mapping[str, Any]]) -> UsageTotals:
    """Everything a session's model calls used, on every branch: replies and the summaries' requests."""
    total: dict[str, Any] = empty_usage()
    calls = unpriced = free = 0
    saved = 0.0
    chat_provider: Any = None  # who answered last: it wrote the summaries that name no model of their own
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, Mapping) and message.get("role") == "assistant":
            chat_provider = message.get("provider")
        usage = entry_usage(entry)
        if usage is None or usage_tokens(usage) == 0:
            continue
        total = add_usage(total, usage)
        calls += 1
        saved += cache_saving(usage)
        details = entry.get("details")
        writer = details.get("summaryModel") if isinstance(details, Mapping) else None
        if is_unpriced(usage) and (writer or chat_provider) == LOCAL_PROVIDER:
            free += 1
        else:
            unpriced += is_unpriced(usage)
    return UsageTotals(total, calls, unpriced, saved=saved, free=free)


__all__ = [
    "COUNT_KEYS", "LOCAL_PROVIDER", "UsageTotals", "add_usage", "cache_saving", "cost_text", "dollars", "entry_usage",
    "is_unpriced",
    "session_totals", "usage_cost", "usage_count", "usage_tokens",
]
