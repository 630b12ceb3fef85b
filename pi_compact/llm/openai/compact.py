"""``POST <api base>/responses/compact``: OpenAI's own compaction of a conversation (the Responses adapter's).

The body is the chat request's ``model`` and ``input`` (converted as for ``/responses``, so a request whose
input starts like the last chat request's reads it from the prompt cache), ``instructions`` when the
request's ``compaction`` edit has them, and ``prompt_cache_key``. The answer (``object``
"response.compaction") holds ``output``: the input's user messages and one opaque ``compaction`` item, the
window that replaces the compacted input; the item works only for the same model and API key (the API
refuses it elsewhere with ``invalid_encrypted_content``), so ``CompactedWindow`` records both. A refused
request raises ``FailureRaised`` with the failure the streaming path would report for the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pi_compact.llm.convert import Target
from pi_compact.llm.failures import Failure, FailureRaised
from pi_compact.llm.openai.responses_input import to_input
from pi_compact.llm.params import cache_retention
from pi_compact.llm.protocol import ChatRequest, ModelInfo

COMPACT_PATH = "/responses/compact"
MAX_ANSWER_BYTES = 64 << 20  # a window is the user messages and one item: far below this


@dataclass(frozen=True)
class CompactedWindow:
    """What ``/responses/compact`` returned: the items that stand for the compacted input, the pass's usage
    (pi's shape, ``cost`` included), and the model and account (``server_compaction.account_of``) they are
    bound to."""

    items: tuple[Mapping[str, Any], ...]
    usage: Mapping[str, Any]
    model: str
    account: str

    @property
    def compaction_item(self) -> Mapping[str, Any]:
        return next(item for item in self.items if item.get("type") == "compaction")


def compact_body(info: ModelInfo, request: ChatRequest, target: Target) -> dict[str, Any]:
    """The JSON body of one compaction of ``request``'s conversation."""
    body: dict[str, Any] = {"model": info.model_id, "input": to_input(request.system, request.messages, target)}
    instructions = request.compaction.instructions if request.compaction is not None else None
    if instructions:
        body["instructions"] = instructions
    if request.session_id and cache_retention(request) != "none":
        body["prompt_cache_key"] = request.session_id
    return body


def read_window(answer: bytes, info: ModelInfo, account: str, costs: Mapping[str, float]) -> CompactedWindow:
    """The window in a 200 answer; an answer without exactly one compaction item raises ``FailureRaised``."""
    try:
        parsed = json.loads(answer)
    except ValueError:
        parsed = None
    output = parsed.get("output") if isinstance(parsed, dict) else None
    items = tuple(item for item in output if isinstance(item, dict)) if isinstance(output, list) else ()
    if sum(item.get("type") == "compaction" for item in items) != 1:
        raise FailureRaised(Failure("empty_reply", "the compaction answer held no compaction item"))
    usage = parsed.get("usage") if isinstance(parsed, dict) else None
    return CompactedWindow(items, pi_usage(usage if isinstance(usage, Mapping) else {}, costs), info.model_id,
                           account)


def pi_usage(usage: Mapping[str, Any], costs: Mapping[str, float]) -> dict[str, Any]:
    """A Responses ``usage`` in pi's shape (``input`` without the cached part)."""
    prompt = _int(usage.get("input_tokens"))
    details = usage.get("input_tokens_details")
    cached = min(prompt, _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0)
    counts = {"input": prompt - cached, "output": _int(usage.get("output_tokens")), "cacheRead": cached,
              "cacheWrite": 0}
    cost = {key: counts[key] * float(costs.get(key, 0.0)) for key in counts}
    cost["total"] = sum(cost.values())
    return {**counts, "totalTokens": sum(counts.values()), "cost": cost}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
