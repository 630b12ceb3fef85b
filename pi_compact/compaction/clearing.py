"""Tool-result clearing: which old tool results a request carries as short stubs, and the stubs (pure).

A layer below compaction (``compaction.clearToolResults``): before a request is sent, old tool results
are replaced *in the request* by a stub naming the tool, its arguments, the original size and the entry
id that holds it word for word (``recall`` reads it back). The session file never changes.

The prompt cache decides the rules. A cleared result changes the request from that result on, so:
- a result once cleared stays cleared, with the same stub (its size is the one recorded when it was
  cleared), until a compaction takes it out of the context: the cleared set only grows;
- a step clears only when at least ``minClearTokens`` can go, and then everything outside the protected
  newest ``keepRecentTokens`` of tool output, in one go, so steps are rare and large.
Never cleared: the protected newest results, pinned ones, the results the model has not answered yet
(the current step's: among them any error it has not acted on). Image results are cleared like text.

The cleared set is recorded as ``custom`` entries (``CLEARED_TYPE``, which pi ignores) holding the ids
cleared by each step, so a resumed session clears the same set; ``cleared_on_path`` reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.compaction.tokens import Estimator, assistant_usage, calculate_context_tokens
from pi_compact.messages import Message
from pi_compact.settings import CompactionSettings

CLEARED_TYPE = "pi-compact/cleared"
ARGS_CHARS = 120  # the arguments shown in a stub, at most (the stub must stay small)
# Defaults on a large window: compaction's own keepRecentTokens protected (OpenCode protects 40k and Gemini 50k;
# on Sonnet prices 40k cost more than one compaction on a 20-file loop, because every later request carries
# the extra 20k: ``benchmarks/bench_tool_clearing.py``), and steps of at least 20k (OpenCode's). On a small
# window they are scaled to the compaction threshold: a quarter of it protected, an eighth the least step
# (the embedded model's 16,384 window: 3,072 and 1,536).
KEEP_RECENT_TOKENS = 20_000
MIN_CLEAR_TOKENS = 20_000


@dataclass(frozen=True)
class ClearRules:
    """``compaction.clearToolResults`` as it applies to one window."""

    keep_recent_tokens: int
    min_clear_tokens: int


@dataclass(frozen=True)
class Cleared:
    """One cleared tool result: its entry and its size (estimated) when it was cleared (the stub says it)."""

    entry_id: str
    tokens: int


def rules_at(settings: CompactionSettings, threshold: int) -> ClearRules | None:
    """The clearing rules from ``compaction.clearToolResults`` at a compaction ``threshold``
    (``Budgets.known_threshold``, 0: unknown window); None when off. A value the user set is used as set; an
    unset one is the default, scaled down to a small threshold."""
    if not settings.clear_tool_results:
        return None
    keep, least = settings.clear_keep_recent_tokens, settings.clear_min_tokens
    if keep is None:
        keep = min(KEEP_RECENT_TOKENS, threshold // 4) if threshold > 0 else KEEP_RECENT_TOKENS
    if least is None:
        least = min(MIN_CLEAR_TOKENS, threshold // 8) if threshold > 0 else MIN_CLEAR_TOKENS
    return ClearRules(keep, max(1, least))


ResultKey = tuple[str, Any]


def result_key(message: Message) -> ResultKey:
    """A tool result as both the live context and the file know it: its call id and its time (some servers
    number their calls call_0, call_1... again in every reply, so the id alone may repeat)."""
    when = message.get("timestamp")
    return (str(message.get("toolCallId")), when if isinstance(when, (int, float, str)) else None)


def result_entry_ids(entries: Iterable[Mapping[str, Any]]) -> dict[ResultKey, str]:
    """``result_key`` -> id of the entry holding that result, over ``entries`` (a branch: the context's
    messages carry no entry ids, and a compaction's retained tail holds copies of them)."""
    found: dict[ResultKey, str] = {}
    for entry in entries:
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, Mapping) and message.get("role") == "toolResult" and isinstance(entry.get("id"), str):
            found[result_key(message)] = entry["id"]
    return found


def tool_results(
    messages: Sequence[Message], ids: Mapping[ResultKey, str],
) -> Iterator[tuple[int, Message, str | None, Mapping[str, Any]]]:
    """Each tool result of ``messages``: its index, itself, its entry id (None: unknown) and the call it
    answers, from the newest assistant message before it that made a call of that id (so a later reply
    reusing the id never changes an earlier result's stub)."""
    calls: dict[str, Mapping[str, Any]] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            for block in message.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    calls[str(block.get("id"))] = block
        elif role == "toolResult":
            yield index, message, ids.get(result_key(message)), calls.get(str(message.get("toolCallId")), {})


def cleared_on_path(path: Iterable[Mapping[str, Any]]) -> dict[str, Cleared]:
    """The cleared results recorded on ``path`` (root first), by entry id, in the order they were cleared."""
    cleared: dict[str, Cleared] = {}
    for entry in path:
        if entry.get("type") != "custom" or entry.get("customType") != CLEARED_TYPE:
            continue
        data = entry.get("data")
        items = data.get("cleared") if isinstance(data, Mapping) else None
        for item in items if isinstance(items, list) else ():
            if isinstance(item, Mapping) and isinstance(item.get("entryId"), str):
                tokens = item.get("tokens")
                cleared.setdefault(item["entryId"], Cleared(item["entryId"], tokens if isinstance(tokens, int) else 0))
    return cleared


def cleared_since_usage(path: Iterable[Mapping[str, Any]]) -> set[str]:
    """The entry ids cleared by records on ``path`` (root first) after its newest assistant reply with a
    usage worth anchoring on: that usage was measured on a request still carrying them whole (a step after
    the last reply of a run, or before a request that then failed), so a context size anchored on it
    must subtract what they save."""
    late: set[str] = set()
    for entry in path:
        message = entry.get("message") if entry.get("type") == "message" else None
        usage = assistant_usage(message) if isinstance(message, Mapping) else None
        if usage is not None and calculate_context_tokens(usage) > 0:
            late.clear()  # this reply's request carried every stub recorded so far
        elif entry.get("type") == "custom" and entry.get("customType") == CLEARED_TYPE:
            late.update(cleared_on_path((entry,)))
    return late


def record_fields(step: Sequence[Cleared]) -> dict[str, Any]:
    """The ``custom`` entry recording one clearing step (pi keeps it and leaves it out of the context)."""
    return {"type": "custom", "customType": CLEARED_TYPE,
            "data": {"cleared": [{"entryId": c.entry_id, "tokens": c.tokens} for c in step]}}


# A reply that failed or was cancelled is no answer: the request converter leaves it out (as pi does), so
# the model never read the results before it in that turn.
_NO_ANSWER = frozenset({"error", "aborted"})


def _unanswered_from(messages: Sequence[Message]) -> int:
    """Where the results the model has not seen yet begin: after the newest assistant message that was
    an answer (not a failed or aborted reply)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "assistant" and message.get("stopReason") not in _NO_ANSWER:
            return index + 1
    return len(messages)


def _candidates(
    messages: Sequence[Message], ids: Mapping[ResultKey, str], cleared: Mapping[str, Cleared],
    pinned: Iterable[str], estimate: Estimator, keep_recent_tokens: int,
) -> list[tuple[Cleared, Message, Mapping[str, Any]]]:
    pins = set(pinned)
    answered = _unanswered_from(messages)
    kept, found = 0, []
    protecting = True
    for index, message, entry_id, call in reversed(list(tool_results(messages, ids))):
        if entry_id is not None and entry_id in cleared:
            continue
        tokens = estimate(message)
        if protecting and (index >= answered or kept + tokens <= keep_recent_tokens):
            kept += tokens
            continue
        protecting = False  # this one crosses the line: it and everything older may go
        if entry_id is None or entry_id in pins or index >= answered:
            continue
        found.append((Cleared(entry_id, tokens), message, call))
    found.reverse()
    return found


def candidates(
    messages: Sequence[Message], ids: Mapping[ResultKey, str], cleared: Mapping[str, Cleared],
    pinned: Iterable[str], estimate: Estimator, keep_recent_tokens: int,
) -> list[Cleared]:
    """The results a step could clear now, oldest first: not cleared yet, not pinned, answered by the
    model (an error it has not acted on yet is not), and older than the newest ``keep_recent_tokens``
    of tool output (counted over results not cleared, the unanswered ones included; the one that crosses
    the line may go)."""
    return [item for item, _, _ in _candidates(messages, ids, cleared, pinned, estimate, keep_recent_tokens)]


def plan_step(
    messages: Sequence[Message], ids: Mapping[ResultKey, str], cleared: Mapping[str, Cleared],
    pinned: Iterable[str], estimate: Estimator, rules: ClearRules,
) -> tuple[Cleared, ...]:
    """The results to clear now: every candidate, when together they free at least ``min_clear_tokens``
    (their size less their stubs'); else none (a small step would rebuild the prompt cache for little)."""
    found = _candidates(messages, ids, cleared, pinned, estimate, rules.keep_recent_tokens)
    freed = sum(item.tokens - estimate(stubbed(message, call, item)) for item, message, call in found)
    return tuple(item for item, _, _ in found) if found and freed >= max(1, rules.min_clear_tokens) else ()


def short_arguments(arguments: Any) -> str:
    """A call's arguments as compact JSON, cut to ``ARGS_CHARS`` (keys sorted: the same call, the same words)."""
    if not isinstance(arguments, Mapping) or not arguments:
        return ""
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"


def stub_text(tool: str, arguments: Any, cleared: Cleared, is_error: bool = False) -> str:
    """What a cleared result says instead of its output: stable words for the same result."""
    args = short_arguments(arguments)
    call = f"{tool} {args}" if args else tool
    kind = "error output" if is_error else "output"
    return (f"[Tool result cleared from the context to save room: the {kind} of `{call}` (~{cleared.tokens:,} "
            f"tokens) is kept word for word in session entry {cleared.entry_id}. To see it again call recall "
            f"with entry_id \"{cleared.entry_id}\", or run the tool again.]")


def stubbed(message: Message, call: Mapping[str, Any], cleared: Cleared) -> Message:
    """``message`` (a tool result answering ``call``) with its content replaced by its stub; every other
    field kept."""
    tool = str(message.get("toolName") or call.get("name") or "tool")
    text = stub_text(tool, call.get("arguments"), cleared, message.get("isError") is True)
    return {**message, "content": [{"type": "text", "text": text}]}


def project(messages: Sequence[Message], ids: Mapping[ResultKey, str], cleared: Mapping[str, Cleared]) -> list[Message]:
    """``messages`` as a request carries them: each cleared tool result as its stub (the rest untouched)."""
    out = list(messages)
    if cleared:
        for index, message, entry_id, call in tool_results(messages, ids):
            item = cleared.get(entry_id) if entry_id is not None else None
            if item is not None:
                out[index] = stubbed(message, call, item)
    return out


def savings(
    messages: Sequence[Message], ids: Mapping[ResultKey, str], cleared: Mapping[str, Cleared], estimate: Estimator,
    *, recorded: bool = False,
) -> dict[int, int]:
    """Tokens each cleared result in ``messages`` saves (its estimate less its stub's), by message index;
    ``recorded``: its size as recorded when it was cleared instead of a new estimate (cheap)."""
    found: dict[int, int] = {}
    for index, message, entry_id, call in tool_results(messages, ids) if cleared else ():
        item = cleared.get(entry_id) if entry_id is not None else None
        if item is not None:
            size = item.tokens if recorded else estimate(message)
            found[index] = max(0, size - estimate(stubbed(message, call, item)))
    return found


__all__ = ["ARGS_CHARS", "CLEARED_TYPE", "KEEP_RECENT_TOKENS", "MIN_CLEAR_TOKENS", "ClearRules", "Cleared",
           "ResultKey", "candidates", "cleared_on_path", "cleared_since_usage", "plan_step", "project",
           "record_fields", "result_entry_ids", "result_key", "savings", "short_arguments",
           "stub_text", "stubbed", "tool_results"]
