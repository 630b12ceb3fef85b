"""A provider's own compaction, as the adapters carry it (pure: no litellm, no I/O).

Two APIs summarize on the server (``providers.ANTHROPIC_COMPACTION``, ``providers.OPENAI_COMPACTION``; the
README's "Server-side compaction" section has their wire formats):

- Anthropic's ``compact_20260112`` context-management edit (beta ``compact-2026-01-12``): a request declares
  ``CompactionEdit``; when its input reaches the trigger the answer starts with a ``compaction`` block
  (``{"type": "compaction", "content": str | None}``) and, with ``pause_after``, stops there. The block goes
  back first in a later request, where the API drops everything before it; every request carrying one must
  declare the edit again.
- OpenAI's ``POST /responses/compact`` (``openai/compact.py``): the input in, the compacted window out (the
  user messages and one opaque ``compaction`` item bound to the model and the account).

On our side: a reply (``protocol.Done``'s message) keeps the block verbatim under ``REPLY_KEY`` and the
usage of each sampling pass under ``ITERATIONS_KEY``; a ``compactionSummary`` message that carries a block
or a window under ``CARRIER_KEY`` (with the provider, api and model that wrote it, and for a window the
account it is bound to) sends it, the block cache-marked, to that same model (and account) and its readable
summary to every other one. Which engine asks for what is ``agent/compaction``'s business, not this module's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EDIT_TYPE = "compact_20260112"
COMPACT_BETA = "compact-2026-01-12"
MIN_TRIGGER = 50_000  # the API refuses a lower ``trigger.value``

REPLY_KEY = "compaction"  # on a reply: the block the server returned, as it returned it
ITERATIONS_KEY = "iterations"  # on a reply: pi-shaped usage per sampling pass (``type``: compaction | message)
CARRIER_KEY = "providerCompaction"  # on a compactionSummary message: {"provider", "api", "model", "block"}


@dataclass(frozen=True)
class CompactionEdit:
    """The ``compact_20260112`` edit a request declares: summarize once the input reaches ``trigger`` tokens
    (at least ``MIN_TRIGGER``), stop after the summary when ``pause_after``, and write it by ``instructions``
    (None: the API's own prompt, which ``instructions`` replaces whole)."""

    trigger: int
    pause_after: bool = True
    instructions: str | None = None

    def wire(self) -> dict[str, Any]:
        """The edit as the Messages API takes it in ``context_management.edits``."""
        edit: dict[str, Any] = {
            "type": EDIT_TYPE,
            "trigger": {"type": "input_tokens", "value": max(MIN_TRIGGER, self.trigger)},
            "pause_after_compaction": self.pause_after,
        }
        if self.instructions is not None:
            edit["instructions"] = self.instructions
        return edit


def dormant_edit(context_window: int) -> CompactionEdit:
    """The edit a request must declare when it only carries a block back: a trigger at the window, which a
    request that fits never reaches, so the server summarizes nothing on its own."""
    return CompactionEdit(trigger=max(MIN_TRIGGER, context_window), pause_after=False)


def carrier(provider: str, api: str, model: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``compactionSummary`` message keeps under ``CARRIER_KEY``: the block and the model that wrote it."""
    return {"provider": provider, "api": api, "model": model, "block": dict(block)}


def window_carrier(provider: str, api: str, model: str, account: str,
                   items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The same for OpenAI's compacted window: its items, bound to the model and the account (``account_of``)."""
    return {"provider": provider, "api": api, "model": model, "account": account, "window": [dict(i) for i in items]}


def account_of(api_key: str) -> str:
    """A short fingerprint of an API key: enough to tell two accounts apart, useless to anyone reading it."""
    return hashlib.sha256(b"pi-compact account\0" + api_key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def carried_window(message: Mapping[str, Any], provider: str, api: str, model: str,
                   account: str) -> list[dict[str, Any]] | None:
    """The compacted window a ``compactionSummary`` message carries for this model and account, else None
    (the API refuses its opaque item anywhere else)."""
    held = message.get(CARRIER_KEY)
    if message.get("role") != "compactionSummary" or not isinstance(held, Mapping) or not account:
        return None
    if (held.get("provider"), held.get("api"), held.get("model"), held.get("account")) != (
            provider, api, model, account):
        return None
    window = held.get("window")
    if not isinstance(window, list) or not any(isinstance(i, Mapping) and i.get("type") == "compaction"
                                               for i in window):
        return None
    return [dict(item) for item in window if isinstance(item, Mapping)]


def carried_block(message: Mapping[str, Any], provider: str, api: str, model: str) -> dict[str, Any] | None:
    """The block a ``compactionSummary`` message carries for this provider, api and model; None when it
    carries none, one of another model, or one without a readable summary (null content is the API's
    "compaction failed" block, a no-op: the text summary serves better)."""
    held = message.get(CARRIER_KEY)
    if message.get("role") != "compactionSummary" or not isinstance(held, Mapping):
        return None
    if (held.get("provider"), held.get("api"), held.get("model")) != (provider, api, model):
        return None
    block = held.get("block")
    if not isinstance(block, Mapping) or block.get("type") != "compaction":
        return None
    content = block.get("content")
    return {"type": "compaction", "content": content} if isinstance(content, str) and content else None


def block_message(block: Mapping[str, Any]) -> dict[str, Any]:
    """The chat-format assistant message that sends ``block`` (litellm puts ``compaction_blocks`` first in the
    Anthropic content; ``content`` None, so no placeholder text is added)."""
    return {"role": "assistant", "content": None, "provider_specific_fields": {"compaction_blocks": [dict(block)]}}


def sends_block(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Does a converted request carry a compaction block?"""
    return any(_blocks(message) for message in messages)


def mark_block(messages: Sequence[dict[str, Any]], control: Mapping[str, str]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with a cache breakpoint on the last compaction block, in place of the system
    prompt's (the block's prefix holds the system prompt, so the API's four breakpoints still suffice)."""
    out = list(messages)
    index = next((i for i in range(len(out) - 1, -1, -1) if _blocks(out[i])), None)
    if index is None:
        return out
    blocks = _blocks(out[index])
    fields = {**out[index]["provider_specific_fields"],
              "compaction_blocks": [*blocks[:-1], {**blocks[-1], "cache_control": dict(control)}]}
    out[index] = {**out[index], "provider_specific_fields": fields}
    system = out[0] if out else None
    if system is not None and system.get("role") == "system" and isinstance(system.get("content"), list):
        out[0] = {**system, "content": [{k: v for k, v in part.items() if k != "cache_control"}
                                        for part in system["content"]]}
    return out


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    fields = message.get("provider_specific_fields")
    blocks = fields.get("compaction_blocks") if isinstance(fields, Mapping) else None
    return list(blocks) if isinstance(blocks, list) else []
