"""Turn a compaction plan into a summary with a model; never strand the session (model is a parameter).

Here: how the history is sized, chunked and asked about (serialized, or on the chat request's prefix),
and the turn prefix of a split turn; whether an answer is good enough is ``gated``'s.

A user cancel raises ``Cancelled`` and a missing API key ``AuthError``: the caller writes nothing.
Any other failure ends in a deterministic summary (``details.fallback``) unless ``allow_fallback`` is off.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pi_compact.cancel import CancelToken
from pi_compact.compaction.asking import Ask, NotReusable, SummarizerOverflow, answer, ask_serialized
from pi_compact.compaction.chunks import split_block, take_chunk
from pi_compact.compaction.fallback import derived_sections, fallback_summary
from pi_compact.compaction.fileops import strip_file_lists
from pi_compact.compaction.gated import NOTHING_REPLACED, gated_summary
from pi_compact.compaction.kept import for_model, keep, with_blocks
from pi_compact.compaction.merge import merge_summaries, mergeable
from pi_compact.compaction.plan import CompactionPlan
from pi_compact.compaction.prompts import (
    INITIAL_PROMPT,
    SPLIT_TURN_SEPARATOR,
    SYSTEM_PROMPT,
    TURN_PREFIX_HEADINGS,
    UPDATE_PROMPT,
    history_instruction,
    history_request_text,
    missing_headings,
    turn_instruction,
    turn_prefix_request_text,
)
from pi_compact.compaction.quality import SHORT_SUMMARY_TOKENS, clear_placeholders
from pi_compact.compaction.reuse import VERBATIM_PREFIX_TOKENS, PrefixShape
from pi_compact.compaction.serialize import FILE_READ_MAX_CHARS, serialize_message
from pi_compact.compaction.tokens import Estimator, estimate_text_tokens, estimate_tokens_auto
from pi_compact.errors import AuthError, Cancelled, CompactionError, ModelError
from pi_compact.llm.protocol import ChatModel
from pi_compact.messages import Message, compaction_summary_message, convert_to_llm

# Estimates can be low (code and data tables run ~50 % over chars/4 in the worst samples), so a
# request is planned to fill at most 1/1.25 of the room it really has.
SAFETY_FACTOR = 1.25
# A summary is asked to fit in this share of what it replaces, so the gate's "smaller than" holds.
GAIN_SHARE = 0.8
# Below this many tokens of room for conversation text, chunking would only produce noise.
MIN_CHUNK_TOKENS = 256
NO_PRIOR_HISTORY = "No prior history."
VERBATIM_PREFIX_INTRO = "The start of this turn, word for word:"

Source = Literal["model", "fallback", "extension"]


@dataclass(frozen=True)
class CompactionResult:
    """A finished summary and what the compaction entry needs."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, Any] = field(hash=False)
    source: Source = "model"
    estimated_tokens_after: int = 0
    error: str | None = None


@dataclass(frozen=True)
class SummaryBudget:
    """Output limits and the window every request must fit in."""

    context_window: int
    history_max_tokens: int
    prefix_max_tokens: int
    must_shrink: bool = True  # a compaction summary replaces history (no inflation); a branch summary does not
    # The conversation's thinking budget when the sizes above are its planned cap (``compaction.window``): every
    # summary request then sends that cap with this budget inside it, as the chat requests do. None: unplanned.
    planned_budget: int | None = None

    @classmethod
    def planned(cls, context_window: int, output_cap: int, thinking_budget: int) -> SummaryBudget:
        """Every summary request with the conversation's own cap and thinking budget (no request of the
        conversation changes them)."""
        return cls(context_window, output_cap, output_cap, planned_budget=thinking_budget)

    @classmethod
    def for_model(cls, context_window: int, max_output_tokens: int | None, reserve_tokens: int) -> SummaryBudget:
        cap = max_output_tokens if max_output_tokens and max_output_tokens > 0 else None
        history = math.floor(0.8 * reserve_tokens)
        prefix = math.floor(0.5 * reserve_tokens)
        if cap is not None:
            history, prefix = min(history, cap), min(prefix, cap)
        # The answer must leave room for a question: never ask for more than half the window.
        half = max(1, context_window // 2)
        return cls(context_window, max(1, min(history, half)), max(1, min(prefix, half)))


def gain_cap(cap: int, replaced: int) -> int:
    """The longest summary worth asking for: one the gate will take (smaller than the ``replaced``
    tokens, ``GAIN_SHARE`` of them, or short anyway: ``SHORT_SUMMARY_TOKENS``), never more than ``cap``.
    A longer answer is refused after it was paid for: on the embedded model two such answers to a
    663-token history took six minutes."""
    if replaced >= NOTHING_REPLACED:
        return cap
    return min(cap, max(SHORT_SUMMARY_TOKENS, int(replaced * GAIN_SHARE)))


def length_note(tokens: int) -> str:
    """Said after the request when the gain caps the answer: the length a model can aim at."""
    return (f"Keep the whole summary under about {tokens} tokens (some {tokens * 3 // 4} words): it must be "
            "shorter than the history it replaces. Short bullets; every section still present.\n\n")


def _room(budget: SummaryBudget, max_tokens: int, fixed_text: str, shrink: int) -> int:
    usable = int((budget.context_window - max_tokens) / SAFETY_FACTOR) // shrink
    return usable - estimate_text_tokens(SYSTEM_PROMPT) - estimate_text_tokens(fixed_text)


def _blocks(messages: Sequence[Message]) -> list[str]:
    return [part for m in convert_to_llm(messages)
            for part in serialize_message(m, FILE_READ_MAX_CHARS, for_summarizer=True)]


def _history(
    model: ChatModel, plan: CompactionPlan, budget: SummaryBudget, instructions: str | None,
    cancel: CancelToken | None, reasoning: str | None, gate: list[dict[str, Any]] | None = None,
) -> str:
    blocks = _blocks(plan.messages_to_summarize)
    # Size the prompt around a chunk by its longest form: with a previous summary the request carries
    # the <previous-summary> tags and the (longer) update prompt; the summary itself is counted below.
    fixed = max(
        (history_request_text("", previous, instructions, strict=True) for previous in ("", "-")),
        key=estimate_text_tokens,
    )
    replaced = sum(estimate_text_tokens(b) for b in blocks) + estimate_text_tokens(plan.previous_summary or "")
    if not budget.must_shrink:
        replaced = NOTHING_REPLACED

    def serialized(chunk: str, previous: str | None) -> Ask:
        """How ``chunk`` is asked about: serialized as text, with the summarizer's own system prompt."""

        def ask(strict: bool, problems: Sequence[str]) -> str:
            text = history_request_text(chunk, previous, instructions, strict=strict, problems=problems)
            # A planned cap holds the thinking budget too: the gain caps only the answer after it.
            thinking = budget.planned_budget or 0
            answer_room = budget.history_max_tokens - thinking
            allowed = gain_cap(answer_room, replaced)
            if allowed < answer_room:  # said just before what to write, which stays last
                prompt = UPDATE_PROMPT if previous else INITIAL_PROMPT
                text = text.replace(prompt, length_note(allowed) + prompt, 1)
            # A thinking model's request keeps the plan's cap (every request of a session has the same
            # thinking and max_tokens, issue 43) and is told the length; without thinking (the embedded
            # model) the cap itself stops an answer the gate would refuse (issue 44).
            hard = answer_room if thinking else allowed
            return ask_serialized(model, text, thinking + hard, cancel, reasoning, budget.planned_budget)

        return ask

    # The update path: the new messages are summarized on their own and merged into the previous summary by
    # code (``merge``); a previous summary without pi's sections is handed to the model to update, as pi does.
    merging = mergeable(plan.previous_summary)
    for shrink in (1, 2, 4):
        room = _room(budget, budget.history_max_tokens, fixed, shrink)
        try:
            summary = None if merging else plan.previous_summary
            rest = list(blocks)
            while rest:
                # Each chunk carries the running summary, so its room is what that summary leaves.
                limit = room - estimate_text_tokens(summary or "")
                if limit < MIN_CHUNK_TOKENS:
                    raise CompactionError(
                        f"The summarizer's window ({budget.context_window} tokens) is too small to summarize "
                        "this history."
                    )
                chunk, rest = take_chunk(rest, limit)
                summary = gated_summary(chunk, summary, serialized(chunk, summary), replaced=replaced, gate=gate,
                                        derived=lambda: derived_sections(plan.messages_to_summarize))
            if merging and plan.previous_summary:
                if gate is not None:
                    gate.append({"action": "mergedWithPrevious"})
                return merge_summaries(plan.previous_summary, summary or "")
            return summary or ""
        except SummarizerOverflow:
            continue  # our estimate was too optimistic for this model: use smaller chunks
    raise CompactionError("The summarizer kept overflowing its context window even with small chunks.")


def _history_on_prefix(
    model: ChatModel, plan: CompactionPlan, budget: SummaryBudget, instructions: str | None,
    cancel: CancelToken | None, shape: PrefixShape, gate: list[dict[str, Any]],
) -> str:
    """The history summary asked on the chat request's prefix, in one request (no chunks: it fitted)."""
    update = plan.previous_summary is not None
    if not shape.fits(shape.history, history_instruction(update, instructions), budget.history_max_tokens,
                      budget.context_window):
        raise NotReusable("the prefix leaves too little room for the summary")
    chunk = "\n\n".join(_blocks(plan.messages_to_summarize))  # what the gate reads the user's rules from
    replaced = estimate_text_tokens(chunk) + estimate_text_tokens(plan.previous_summary or "")

    def ask(strict: bool, problems: Sequence[str]) -> str:
        request = shape.ask(shape.history, history_instruction(update, instructions, problems),
                            budget.history_max_tokens)
        return answer(model, request, cancel, reused=True)

    return gated_summary(chunk, plan.previous_summary, ask, replaced=replaced if budget.must_shrink else
                         NOTHING_REPLACED, reused=True, gate=gate,
                         derived=lambda: derived_sections(plan.messages_to_summarize))


def _turn_prefix(
    model: ChatModel, plan: CompactionPlan, budget: SummaryBudget, instructions: str | None,
    cancel: CancelToken | None, reasoning: str | None, shape: PrefixShape | None = None,
) -> str:
    text = "\n\n".join(_blocks(plan.turn_prefix_messages))
    limit = _room(budget, budget.prefix_max_tokens, turn_prefix_request_text("", instructions), 1)
    if limit < MIN_CHUNK_TOKENS:
        raise CompactionError("The summarizer's window is too small for the turn prefix.")
    if estimate_text_tokens(text) > limit:
        # One turn is summarized in one call; keep its start and its end, which matter most.
        half = limit // 2 - 16
        head = split_block(text, half)[0]
        size = half * 4
        while size > 1 and estimate_text_tokens(text[-size:]) > half:
            size = size * 3 // 4
        text = f"{head}\n\n[... middle of the turn omitted to fit ...]\n\n{text[-size:]}"
    if estimate_text_tokens(text) <= VERBATIM_PREFIX_TOKENS:
        return verbatim_prefix(text)  # no summary would be shorter: keep the words themselves, no request
    if shape is not None:
        ask = turn_instruction(instructions)
        if not shape.fits(shape.turn, ask, budget.prefix_max_tokens, budget.context_window):
            raise NotReusable("the prefix leaves too little room for the summary")
        summary = answer(model, shape.ask(shape.turn, ask, budget.prefix_max_tokens), cancel, reused=True)
        if missing_headings(summary, TURN_PREFIX_HEADINGS):
            raise NotReusable("the reply lacked the required sections")
    else:
        summary = ask_serialized(model, turn_prefix_request_text(text, instructions), budget.prefix_max_tokens, cancel,
                                 reasoning, budget.planned_budget)
    if not summary:
        raise CompactionError("The model returned an empty turn-prefix summary.")
    # No inflation, and no fallback for it: a "summary" at least as long as the turn keeps the turn instead.
    return summary if estimate_text_tokens(summary) < estimate_text_tokens(text) else verbatim_prefix(text)


def verbatim_prefix(serialized: str) -> str:
    """The start of a split turn kept word for word (serialized as the summarizer would have read it)."""
    return f"{VERBATIM_PREFIX_INTRO}\n\n{serialized}"


def estimated_tokens_after(summary: str, kept: Sequence[Message], estimate: Estimator = estimate_tokens_auto) -> int:
    """Estimated context size right after the compaction: the summary message plus the kept tail."""
    head = estimate(compaction_summary_message(summary, 0, 0))
    return head + sum(estimate(m) for m in kept)


# Beyond pi:
# - every request is sized before it is sent; history too large for the summarizer's window is summarized in
#   consecutive chunks, each updating the summary of the ones before, so no request can exceed the window
#   whatever the session holds;
# - a summary lacking the required headings is asked for once more, strictly;
# - when the model still fails, a deterministic summary is built instead (``details.fallback``);
# - a split turn whose history is empty keeps the previous summary (pi replaces it with "No prior history." and
#   loses it).
# - what a summary must keep whatever the model writes (the user's messages, the tools' outcomes, the files
#   shell commands wrote) is appended after the model's answer as tagged blocks of quoted data, in one place
#   here (``compaction.kept``), for the model-free summary too.
def summarize(
    plan: CompactionPlan,
    model: ChatModel,
    budget: SummaryBudget,
    *,
    instructions: str | None = None,
    cancel: CancelToken | None = None,
    reasoning: str | None = None,
    run_parallel: Callable[[Callable[[], str], Callable[[], str]], tuple[str, str]] | None = None,
    allow_fallback: bool = True,
    shape: PrefixShape | None = None,
) -> CompactionResult:
    """Summarize a plan; falls back to a model-free summary on failure (unless ``allow_fallback`` is
    False: then the failure is raised), raises Cancelled on cancel. ``shape``: ask on the last chat
    request's prefix first (``compaction.reuse``); ``details.summaryRequest`` then says which way served."""
    kept = keep(plan, budget.context_window)  # beyond pi: what the summary keeps by construction
    details: dict[str, Any] = kept.details()
    gate: list[dict[str, Any]] = [{"action": "shellFilesAdded", "files": list(kept.shell_files)}] \
        if kept.shell_files else []
    # The model is shown the previous summary without our blocks (``kept.for_model``).
    asked = replace(plan, previous_summary=for_model(plan.previous_summary)) \
        if plan.previous_summary is not None else plan
    source: Source = "model"
    error: str | None = None
    try:
        body = clear_placeholders(_model_summary(asked, model, budget, instructions, cancel, reasoning,
                                                 run_parallel or _parallel, gate, shape, details))
    except (Cancelled, AuthError):
        raise  # a cancel writes nothing; a missing key is the user's to fix, not a reason to guess
    except (ModelError, CompactionError) as exc:
        if cancel is not None and cancel.cancelled:
            raise Cancelled("Compaction cancelled; nothing was written.") from exc
        if not allow_fallback:
            raise
        error = str(exc)
        source = "fallback"
        details.update({"fallback": True, "error": error})
        body = fallback_summary(
            [*plan.messages_to_summarize, *plan.turn_prefix_messages], previous_summary=asked.previous_summary,
            error=error,
        )
    if gate:
        details["qualityGate"] = gate
    summary = with_blocks(body, kept)
    return CompactionResult(
        summary=summary, first_kept_entry_id=plan.first_kept_entry_id, tokens_before=plan.tokens_before,
        details=details, source=source, estimated_tokens_after=estimated_tokens_after(summary, plan.kept_messages),
        error=error,
    )


def _parallel(first: Callable[[], str], second: Callable[[], str]) -> tuple[str, str]:
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="summarize") as pool:
        a, b = pool.submit(first), pool.submit(second)
        return a.result(), b.result()


def _model_summary(
    plan: CompactionPlan, model: ChatModel, budget: SummaryBudget, instructions: str | None,
    cancel: CancelToken | None, reasoning: str | None,
    run_parallel: Callable[[Callable[[], str], Callable[[], str]], tuple[str, str]],
    gate: list[dict[str, Any]], shape: PrefixShape | None = None, notes: dict[str, Any] | None = None,
) -> str:
    if shape is not None:
        tried: list[dict[str, Any]] = []  # what the gate did to answers that are kept only if the way works
        try:
            text = _parts(plan, lambda: _history_on_prefix(model, plan, budget, instructions, cancel, shape, tried),
                          lambda: _turn_prefix(model, plan, budget, instructions, cancel, reasoning, shape),
                          run_parallel)
        except NotReusable as exc:
            if notes is not None:
                notes["summaryRequest"] = {"shape": "serialized", "prefixNotUsed": str(exc)}
        else:
            gate.extend(tried)
            if notes is not None:
                notes["summaryRequest"] = {"shape": "prefix", "prefixMessages": len(shape.turn)}
            return text
    return _parts(plan, lambda: _history(model, plan, budget, instructions, cancel, reasoning, gate),
                  lambda: _turn_prefix(model, plan, budget, instructions, cancel, reasoning), run_parallel)


def _parts(
    plan: CompactionPlan, history: Callable[[], str], prefix: Callable[[], str],
    run_parallel: Callable[[Callable[[], str], Callable[[], str]], tuple[str, str]],
) -> str:
    """The history summary, and for a split turn the turn prefix's beside it (asked in parallel)."""
    if plan.is_split_turn and plan.turn_prefix_messages:
        def whole_history() -> str:
            if plan.messages_to_summarize:
                return history()
            # Fix of pi's loss: an empty history keeps the previous summary instead of dropping it
            # (without its file lists: the current ones, appended below, include them).
            return strip_file_lists(plan.previous_summary or "") or NO_PRIOR_HISTORY

        history_text, prefix_text = run_parallel(whole_history, prefix)
        return history_text + SPLIT_TURN_SEPARATOR + prefix_text
    return history()
