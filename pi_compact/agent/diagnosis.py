"""Why compaction cannot help: the biggest consumers of the context, named with sizes (pure).

Looks at what compaction cannot shrink: the system prompt (and the AGENTS.md in it), the messages in
the live context (a tool result is named by the call that produced it, with its entry id), and the
budgets (``keepRecentTokens`` close to the window). The sentence ends with what to do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.compaction.tokens import Estimator, estimate_text_tokens
from pi_compact.session.entries import message_of_entry
from pi_compact.settings import CompactionSettings

AGENTS_MARKER = "Project instructions (from AGENTS.md):"
TOP = 3


def _live_entries(branch: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The entries whose messages the live context carries: from the latest compaction's kept boundary."""
    last = max((i for i, e in enumerate(branch) if e.get("type") == "compaction"), default=-1)
    if last < 0:
        return list(branch)
    kept = branch[last].get("firstKeptEntryId")
    start = next((i for i, e in enumerate(branch[:last]) if e.get("id") == kept), last + 1)
    return [e for i, e in enumerate(branch) if i >= start and i != last]


def _calls(entries: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Tool call id -> "name argument" (the command, path or pattern)."""
    found: dict[str, str] = {}
    for entry in entries:
        message = message_of_entry(entry) or {}
        for block in message.get("content") or () if message.get("role") == "assistant" else ():
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                raw = block.get("arguments")
                args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
                key = next((str(args[k]) for k in ("command", "path", "pattern") if isinstance(args.get(k), str)), "")
                found[str(block.get("id"))] = f"{block.get('name')} {key}".strip()[:80]
    return found


def top_consumers(
    system_prompt: str, branch: Sequence[Mapping[str, Any]], estimator: Estimator,
    settings: CompactionSettings, window: int,
) -> list[tuple[int, str]]:
    """(tokens, description) of the biggest consumers, biggest first (at most ``TOP``)."""
    found: list[tuple[int, str]] = []
    head, _, agents = system_prompt.partition(AGENTS_MARKER)
    if agents:
        size = estimate_text_tokens(agents)
        found.append((size, f"AGENTS.md in the system prompt, {size:,} tokens"))
    size = estimate_text_tokens(head)
    found.append((size, f"the system prompt, {size:,} tokens"))
    entries = _live_entries(branch)
    calls = _calls(entries)
    for entry in entries:
        message = message_of_entry(entry)
        if message is None:
            continue
        size = estimator(message)
        where = f"entry {str(entry.get('id'))[:8]}…"
        if message.get("role") == "toolResult":
            call = calls.get(str(message.get("toolCallId")), str(message.get("toolName") or "a tool"))
            found.append((size, f"tool result of `{call}`, {where}, {size:,} tokens"))
        else:
            found.append((size, f"{message.get('role')} message, {where}, {size:,} tokens"))
    keep = settings.keep_recent_tokens
    if window > 0 and keep * 2 >= window - settings.reserve_tokens:
        found.append((keep, f"keepRecentTokens {keep:,} of a {window:,} window"))
    return sorted(found, key=lambda item: -item[0])[:TOP]


def advice(description: str) -> str:
    """What to do about the top consumer."""
    if description.startswith("AGENTS.md"):
        return "Shorten AGENTS.md or use a model with a larger window."
    if description.startswith("the system prompt"):
        return "Use a model with a larger window."
    if description.startswith("keepRecentTokens"):
        return "Lower compaction.keepRecentTokens."
    return "Start a /new session, or ask for a smaller output next time (e.g. head/grep instead of cat)."


def diagnose(
    system_prompt: str, branch: Sequence[Mapping[str, Any]], estimator: Estimator,
    settings: CompactionSettings, window: int,
) -> str:
    """One paragraph: the top consumers and what to do about the biggest."""
    top = top_consumers(system_prompt, branch, estimator, settings, window)
    if not top:
        return ""
    return "Largest: " + "; ".join(text for _, text in top) + ". " + advice(top[0][1])


def stop_notice(diagnosis: str) -> str:
    """Said once when the loop guard stops automatic compaction."""
    return (
        "Automatic compaction is off for this session: the last two compactions freed too little or the "
        f"context was back over the threshold at once. {diagnosis} (/autocompact on turns it back on.)"
    )


__all__ = ["diagnose", "stop_notice", "top_consumers"]
