"""Which way a summary is asked, by what each way is expected to cost (``compaction.reusePrefix`` "auto").

On the chat prefix a summary request reads from the provider's cache what earlier requests left there and
pays for the rest in full (on Anthropic with the write premium, since it marks what it sends); serialized,
it pays the input price for a shorter text (file reads cut to 500 characters, other tool results to
2,000). Which is cheaper depends on what the provider still holds. After a resume, or once the cached
turns are older than the cache's lifetime, it holds nothing and the prefix costs more than the text it
replaces; in a read-heavy loop the serialized text is a fraction of the prefix, even against cache reads.

- ``planned_cut``: where the next compaction would cut, which the chat requests near the threshold mark
  (``ChatRequest.cache_cut``), so the summary request finds that prefix in the cache. Anthropic caches
  only at breakpoints (looking back 20 blocks), and a cut far from a request's end was never one.
- ``held_prefixes``: what the provider holds: the marks of this run's requests that are still alive, or,
  when none was sent yet (a resume, ``compact FILE``), the ends of the requests the recorded replies
  answered, where each reply names a request this agent sent as it would send it now (``DIGEST_KEY``).
- ``choose``: both ways priced in input-token units, and the cheaper one (the prefix marking the longest
  held part, so it reads it).
- ``send_first``: a prompt that took the context past the threshold, sent first and compacted after, or
  compacted first: the order that costs less.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.agent.request import Sent
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.reuse import PrefixShape, prompt_sizes
from pi_compact.llm.params import CachePrices
from pi_compact.llm.protocol import ChatRequest, ModelInfo
from pi_compact.messages import Message
from pi_compact.settings import CompactionSettings

# An entry this close to the end of its lifetime is not counted on: the summary request may come later.
LIFETIME_MARGIN_MS = 15_000
# The key of a reply's entry that names the request it answered (``request.request_digest``; pi ignores it).
DIGEST_KEY = "requestDigest"
_USAGE_KEYS = ("input", "cacheRead", "cacheWrite")


@dataclass(frozen=True)
class Held:
    """The first ``messages`` request messages, which a request wrote to (or read from) the cache at ``at_ms``."""

    messages: int
    at_ms: int


@dataclass(frozen=True)
class Choice:
    """The prefix shape as it would be asked (marking what the cache holds) and what each way was expected
    to cost, in input tokens."""

    shape: PrefixShape
    prefix: float
    serialized: float
    held_tokens: int

    @property
    def cheaper(self) -> PrefixShape | None:
        """The shape when the prefix is the cheaper way (None: serialized)."""
        return self.shape if self.prefix <= self.serialized else None

    def note(self) -> dict[str, Any]:
        """What ``details.summaryRequest`` records of the choice."""
        return {"expectedInputTokens": {"prefix": round(self.prefix), "serialized": round(self.serialized)},
                "heldTokens": self.held_tokens}


def planned_cut(branch: Sequence[Mapping[str, Any]], context: Sequence[Message], settings: CompactionSettings,
                to_llm: Callable[[Sequence[Message]], list[Message]]) -> int | None:
    """The request messages before the larger of the next compaction's summary requests ends: the history
    (up to a split turn's start), or the turn's start when it holds more messages (a long tool loop on one
    prompt); None when it would summarize nothing. ``context`` is the live context of ``branch``;
    ``to_llm`` turns its messages into what a request carries."""
    plan = prepare_compaction(branch, settings, keep_newest=True)
    if plan is None or not (plan.messages_to_summarize or plan.turn_prefix_messages):
        return None
    cut = len(context) - len(plan.kept_messages)
    start = cut - len(plan.turn_prefix_messages)
    end = start if start >= len(plan.turn_prefix_messages) else cut
    return len(to_llm(context[:end])) if end > 0 else None


def held_prefixes(
    shape: PrefixShape, context: Sequence[Message], sent: Sequence[Sent], info: ModelInfo, marked: bool,
    to_llm: Callable[[Sequence[Message]], list[Message]], digest: str | None = None,
    digest_of: Callable[[ChatRequest], str] | None = None, ours: Callable[[Message], bool] | None = None,
) -> list[Held]:
    """The leading parts of ``shape``'s prefixes the provider may hold, and when each was last written.

    ``marked``: the provider holds only what a request marked (its end, and the planned cut where it
    carried one); else any prefix of what it was sent. ``digest``: ``request_digest`` of ``shape``'s request
    (``digest_of`` computes it for another): only a request with the same (this agent, the same system prompt,
    tools and thinking settings) wrote entries it can read. After a resume ``ours`` says which recorded replies
    answered such a request (their entries carry that digest, ``DIGEST_KEY``): a session pi or another machine
    wrote has none, and nothing of it is in this agent's cache.
    """
    prefix = shape.turn  # (the longer one: the history ends where a split turn starts)
    if sent:
        found: list[Held] = []
        for one in sent:
            request = one.request
            if digest is not None and digest_of is not None:
                if digest_of(request) != digest:
                    continue
            elif (request.system, tuple(request.tools), request.thinking_level) != \
                    (shape.request.system, tuple(shape.request.tools), shape.request.thinking_level):
                continue  # another system prompt, other tools or thinking: none of its entries match
            common = _common(request.messages, prefix)
            ends = (request.cache_cut, len(request.messages)) if marked else (common,)
            found.extend(Held(end, one.at_ms) for end in ends if end and end <= common)
        return found
    # Nothing sent in this run: each recorded reply answered a request that ended just before it (and
    # marked its end there), sent about when the reply is stamped.
    found, count = [], 0
    for message in context:
        if _answered(message, info) and (ours is None or ours(message)):
            found.append(Held(count if marked else min(count, len(prefix)), int(message.get("timestamp") or 0)))
        count += len(to_llm([message]))
    return [held for held in found if 0 < held.messages <= len(prefix)]


def choose(shape: PrefixShape, plan: CompactionPlan, instructions: str | None, held: Sequence[Held],
           prices: CachePrices, now_ms: int) -> Choice:
    """Both ways priced, the prefix marking the longest part still held. Output is left out: the summary is
    asked for alike both ways."""
    shape = shape.held_at([h.messages for h in held if now_ms - h.at_ms < prices.lifetime_ms - LIFETIME_MARGIN_MS])
    sizes = prompt_sizes(shape, plan, instructions)
    # Each prefix request reads its held part and pays the rest at the write price (Anthropic: a summary
    # request marks what it sends; an implicit cache has no premium).
    prefix = sum(read * prices.read + max(0, size - read) * prices.write for size, read in zip(
        sizes.prefix, sizes.held, strict=True))
    return Choice(shape, prefix, float(sum(sizes.serialized)), max(sizes.held, default=0))


def send_first(summary_now: float | None, tokens: int, held: int, prices: CachePrices) -> bool:
    """Is sending a prompt that took the context past the threshold (``tokens`` now, ``held`` of them in the
    provider's cache) and compacting after the turn expected to cost less than compacting first
    (``summary_now`` input tokens: ``Compactor.summary_cost``; None: nothing to summarize) and sending it on
    the smaller context? In input tokens; the smaller context is written either way, once.

    Sent first, the turn reads what is held and writes the rest, and the compaction after it reads the whole
    context the turn left in the cache; compacted first, only the summary is paid now."""
    if summary_now is None:
        return True  # a compaction would summarize nothing: the prompt goes out as it is
    turn = held * prices.read + (tokens - held) * prices.write
    return turn + tokens * prices.read < summary_now


def _common(sent: Sequence[Message], prefix: Sequence[Message]) -> int:
    """How many leading messages ``sent`` and ``prefix`` share."""
    count = 0
    for left, right in zip(sent, prefix, strict=False):
        if left is not right and left != right:
            break
        count += 1
    return count


def _answered(message: Message, info: ModelInfo) -> bool:
    """A reply of ``info``'s model to a request that reached the provider (it reported usage)."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("error", "aborted"):
        return False
    usage = message.get("usage")
    return info.is_same_model(message.get("provider"), message.get("model")) and isinstance(usage, Mapping) \
        and any(isinstance(usage.get(key), int) and usage[key] > 0 for key in _USAGE_KEYS)


__all__ = ["DIGEST_KEY", "Choice", "Held", "Sent", "choose", "held_prefixes", "planned_cut", "send_first"]
