"""The loop guard: when automatic compaction stops helping, stop it and say why (pure).

A compaction is futile when it frees less than ``MIN_FREED_SHARE`` of the context, leaves it past the
threshold (unless it kept more than keepRecentTokens because nothing newer could be cut: it then did
all it could, and the next message gives it a cut), writes nothing for lack of gain, or when the
context is back past the threshold within ``REFILL_TURNS`` turns; after ``LIMIT`` futile ones in a row
automatic compaction stops for the session (``/autocompact on`` resets it). A check that finds nothing
to compact is not futile: it costs no model call, and the cut rule leaves nothing only when everything
since the last kept boundary is one message and its tool results, which the next message changes.
Here too: the warnings after a compaction and the diagnosis that names the biggest consumers of the
context, since they are what the guard says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.cut import find_cut_point
from pi_compact.compaction.newest_fit import newest_result_index
from pi_compact.compaction.tokens import ContextUsage, Estimator, estimate_text_tokens
from pi_compact.compaction.window import WindowPlan
from pi_compact.llm.protocol import ModelInfo
from pi_compact.messages import Message
from pi_compact.paths import settings_path_hint
from pi_compact.session.entries import message_of_entry
from pi_compact.session.pins import Pin, budget_warning, pin_budget
from pi_compact.settings import model_key

MIN_FREED_SHARE = 0.2
REFILL_TURNS = 2
LIMIT = 2

# Why an automatic compaction counted as futile: the stop notice says what happened, not a guess.
Futility = Literal["freed_little", "refilled", "no_gain"]
FUTILITY_WORDS: dict[Futility, str] = {
    "freed_little": "the last compactions freed too little or left the context over the threshold",
    "refilled": "the context was back over the threshold right after a compaction",
    "no_gain": "a summary would not have made the context smaller, so none was written",
}


@dataclass
class LoopGuard:
    """Per-session record of how well automatic compactions worked."""

    streak: int = 0  # futile compactions in a row
    stopped: bool = False
    _turns_since: int | None = None  # turns watched since a compaction that looked useful
    _last_turn: int | None = None
    whys: list[Futility] = field(default_factory=list)  # why each futile one of the streak was futile

    def compacted(self, before: int, after: int, threshold: int, *, kept_over_budget: bool = False,
                  can_fit: bool = False) -> None:
        """Record an automatic compaction that was written: ``before``/``after`` context tokens.

        ``kept_over_budget``: its kept part is larger than keepRecentTokens because no later cut was
        valid (a big newest tool result). Left past the threshold by that, it is not futile when it
        freed enough: the next compaction can cut after that message, so nothing is watched for a refill.
        ``can_fit``: the next request fits, or will once that message (the turn's newest tool result) is sent
        cut, as an overflow's retry does. Then an over-budget one is not futile however little it freed:
        only that message is in the way, and a compaction that could not free more is not asked for again
        (``Compactions._can_help``). The walk: 14,056 -> 12,203 and 16,198 -> 14,162 beside one big read
        turned automatic compaction off.
        """
        freed = (before - after) / before if before > 0 else 0.0
        if kept_over_budget and can_fit:
            self._turns_since = None
        elif freed < MIN_FREED_SHARE or (after > threshold and not kept_over_budget):
            self.futile("freed_little")
        elif kept_over_budget:
            # It did all it could; what refills the context is the next big message, which the next
            # compaction can cut after (a tool loop reading a big log each turn): no refill is watched for.
            self._turns_since = None
        else:
            self._turns_since = 0  # useful so far: see whether the context refills at once

    def futile(self, why: Futility = "freed_little") -> None:
        """Record a futile automatic compaction (also one that wrote nothing for lack of gain), and ``why``."""
        self.streak += 1
        self.whys.append(why)
        self._turns_since = None

    def observe(self, turn: int, tokens: int, threshold: int) -> None:
        """The context after turn number ``turn`` (the messages recorded so far, a count that only grows; a
        turn already seen is ignored)."""
        if turn == self._last_turn or self._turns_since is None:
            self._last_turn = turn
            return
        self._last_turn = turn
        self._turns_since += 1
        if tokens > threshold:
            self.futile("refilled")  # back over the threshold within REFILL_TURNS turns
        elif self._turns_since >= REFILL_TURNS:
            self.streak, self._turns_since = 0, None  # that compaction really helped
            self.whys.clear()

    @property
    def should_stop(self) -> bool:
        return not self.stopped and self.streak >= LIMIT

    def stop(self) -> None:
        self.stopped = True

    def reset(self) -> None:
        self.streak, self.stopped, self._turns_since, self._last_turn = 0, False, None, None
        self.whys.clear()


# ---- warnings after a compaction ------------------------------------------------------------------


def after_compaction(
    usage: ContextUsage, messages: Sequence[Message], estimator: Estimator, plan: WindowPlan,
    pins: Sequence[Pin], guard: LoopGuard, *, automatic: bool, tokens_before: int, kept_over_budget: bool = False,
) -> list[str]:
    """The warnings to show after a written compaction; records an automatic one with ``guard``."""
    budgets = plan.settings.compaction
    warnings: list[str] = []
    if usage.tokens > usage.threshold:  # (the plan's threshold, its output cap left free)
        warnings.append(still_too_full(usage, messages, estimator, budgets.keep_recent_tokens))
    if automatic:
        guard.compacted(tokens_before, usage.tokens, usage.threshold, kept_over_budget=kept_over_budget,
                        can_fit=plan.fits(usage.tokens) or newest_result_index(messages) is not None)
    over = budget_warning(pins, pin_budget(budgets.pin_budget, usage.context_window),
                          lambda text: estimate_text_tokens(text, budgets.token_estimator))
    if over is not None:
        warnings.append(over)
    return warnings


def window_hint(info: ModelInfo) -> str:
    """Said when the provider overflows with nothing left to compact: our window is likely too big."""
    return (
        f"The provider reports a context overflow and there is nothing to compact: the context window known "
        f"for {info.model} is {info.context_window:,} tokens; if the provider's real limit is smaller, set "
        f"{model_key(info.model)}.contextWindow in {settings_path_hint()} or pass --context-window."
    )


def still_too_full(usage: ContextUsage, messages: Sequence[Message], estimator: Estimator, keep: int) -> str:
    """After a compaction that left the context past the threshold: by how much, the biggest kept message, and
    what would help; when that message is the turn's newest tool result, only what will happen to it.
    ``compaction.keepRecentTokens`` is named only when a smaller value would bring the context under the
    threshold (issue 44: it was advised at 2,000 with one 11,579-token message in the way).

    Without this the user only sees compaction after compaction (peers' "thrash" complaints).
    """
    biggest = max(messages, key=estimator, default=None)
    newest = newest_result_index(messages)
    if newest is not None and messages[newest] is biggest:
        # Nothing to advise: the request carries that result cut to what fits (``newest_fit``), as the retry
        # after an overflow does; "use a larger window" had been said just before the cut answered (the walk).
        return (f"The turn's newest tool result ({biggest.get('toolName') or 'a tool'}, about "
                f"{estimator(biggest):,} tokens) stays whole in the session; a request it does not fit carries it "
                "cut to what fits, with the lines that hold the question's words and a note on how to read the rest.")
    culprit = ""
    if biggest is not None:
        name = f" of {biggest.get('toolName')}" if biggest.get("toolName") else ""
        culprit = f" The largest kept message is a {biggest.get('role')}{name} of about {estimator(biggest):,} tokens."
    start = 1 if messages and messages[0].get("role") == "compactionSummary" else 0
    kept = sum(estimator(m) for m in messages[start:])
    if usage.tokens - kept + least_kept(messages[start:], estimator) <= usage.threshold:
        advice = f"Lower compaction.keepRecentTokens (now {keep:,}) or use a model with a larger window."
    else:  # no keep figure can cut into the newest message and its call
        advice = ("The newest message and its call are kept whole whatever compaction.keepRecentTokens is: use a "
                  "model with a larger window, or ask for a smaller output next time (a range of lines, grep).")
    return (
        f"Compaction could not bring the context under the auto-compaction threshold "
        f"({usage.tokens:,} of {usage.threshold:,} tokens after compacting).{culprit} {advice}"
    )


def futile_notice(freed: int, tokens: int, newest: int) -> str:
    """Said when an automatic compaction is not asked for because it could not help (``Compactions._can_help``)."""
    return (f"Automatic compaction skipped: it could free only ~{freed:,} of ~{tokens:,} tokens, and the newest "
            f"message with its call (~{newest:,} tokens) is kept whole whatever compaction.keepRecentTokens is. "
            "Use a model with a larger window, or ask for a smaller output next time (a range of lines, grep).")


def least_kept(messages: Sequence[Message], estimator: Estimator) -> int:
    """The least a compaction can keep of ``messages``: the newest one, with the call before it when it is a
    tool result (a kept region never starts at a tool result)."""
    entries = [{"type": "message", "message": m} for m in messages]
    cut = find_cut_point(entries, 0, len(entries), 1, estimator)
    return sum(estimator(m) for m in messages[cut.first_kept_entry_index:])


# ---- diagnosis: what compaction cannot shrink -----------------------------------------------------


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
                found[str(block.get("id"))] = f"{block.get('name')} {_call_key(block)}".strip()[:80]
    return found


def _largest_call(message: Mapping[str, Any], estimator: Estimator) -> tuple[int, str] | None:
    """(tokens, "name argument") of an assistant message's largest tool call, if it has any."""
    if message.get("role") != "assistant":
        return None
    sizes = [
        (estimator({"role": "assistant", "content": [block]}), f"{block.get('name')} {_call_key(block)}".strip()[:80])
        for block in message.get("content") or ()
        if isinstance(block, Mapping) and block.get("type") == "toolCall"
    ]
    return max(sizes, default=None)


def _call_key(block: Mapping[str, Any]) -> str:
    raw = block.get("arguments")
    args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return next((str(args[k]) for k in ("command", "path", "pattern") if isinstance(args.get(k), str)), "")


def top_consumers(
    system_prompt: str, branch: Sequence[Mapping[str, Any]], estimator: Estimator, budgets: Budgets | None = None,
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
        elif (biggest := _largest_call(message, estimator)) is not None and biggest[0] * 2 >= size:
            # A reply that is mostly one call's arguments (a huge write or edit): name the call, since
            # "assistant message" would send the user looking at the model's prose.
            found.append((size, f"arguments of the `{biggest[1]}` call, {where}, {size:,} tokens"))
        else:
            found.append((size, f"{message.get('role')} message, {where}, {size:,} tokens"))
    if budgets is not None and budgets.keep_crowds_threshold:
        found.append((budgets.keep, f"keepRecentTokens {budgets.keep:,} of a {budgets.window:,} window"))
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


def diagnose(system_prompt: str, branch: Sequence[Mapping[str, Any]], estimator: Estimator, plan: WindowPlan) -> str:
    """One paragraph: the top consumers and what to do about the biggest."""
    top = top_consumers(system_prompt, branch, estimator, plan.budgets)
    if not top:
        return ""
    return "Largest: " + "; ".join(text for _, text in top) + ". " + advice(top[0][1])


def stop_notice(diagnosis: str, whys: Sequence[Futility] = ()) -> str:
    """Said once when the loop guard stops automatic compaction: what happened in the futile streak."""
    said = "; ".join(dict.fromkeys(FUTILITY_WORDS[why] for why in whys[-LIMIT:])) or FUTILITY_WORDS["freed_little"]
    return f"Automatic compaction is off for this session: {said}. {diagnosis} (/autocompact on turns it back on.)"


__all__ = [
    "FUTILITY_WORDS",
    "LIMIT",
    "MIN_FREED_SHARE",
    "REFILL_TURNS",
    "LoopGuard",
    "after_compaction",
    "diagnose",
    "futile_notice",
    "least_kept",
    "still_too_full",
    "stop_notice",
    "top_consumers",
    "window_hint",
]
