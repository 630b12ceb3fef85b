"""One chunk's summary, asked for until it passes the quality gate (pure; the asking is a parameter).

``gated_summary`` asks at most twice, the retry naming the first answer's problems, keeps the better
usable answer and carries forgotten items back; no usable answer raises
``CompactionError`` (the caller then writes the model-free summary). How the question is sent (the
serialized history, or the chat request's prefix) is ``summarize``'s concern, through ``Ask``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pi_compact.compaction.asking import Ask, NotReusable
from pi_compact.compaction.prompts import missing_headings
from pi_compact.compaction.quality import (
    SHORT_SUMMARY_TOKENS,
    better_answer,
    completed_tail,
    fill_answer,
    gate_problems,
    merge_back,
    missing_items,
    placeholder_sections,
)
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.errors import CompactionError

NOTHING_REPLACED = 1 << 62  # what a summary that replaces nothing is measured against


def gated_summary(
    chunk: str, previous: str | None, ask: Ask, *, replaced: int, reused: bool = False,
    gate: list[dict[str, Any]] | None = None, derived: Callable[[], Mapping[str, str]] | None = None,
) -> str:
    """The summary of ``chunk`` (updating ``previous``) that passed the gate (``compaction.quality``).

    The retry names the first answer's actual problems (the strict reminder only when headings were
    missing). It can only improve: a retry that loses any exact value of a usable first answer does not
    replace it; what the retry added to the rules and decisions is merged into the first instead.
    Missing items of the previous summary are merged back (the user's own words are kept by
    ``compaction.kept``, after the prose, not here). No usable answer (no headings, placeholders, not
    smaller than the ``replaced`` history; the size only past ``SHORT_SUMMARY_TOKENS``: a tiny history is
    left to the no-gain check) raises ``CompactionError``: the model-free fallback. ``gate`` records what
    the gate did; ``derived`` gives the history's own account of each section (for ones left as
    placeholders twice). ``reused``: asked on a chat prefix, where a first answer without the headings is
    ``NotReusable`` (the serialized way follows, not the strict reminder).
    """
    must_fit = replaced if replaced > SHORT_SUMMARY_TOKENS else NOTHING_REPLACED

    def hard(text: str) -> list[str]:  # problems that make an answer unusable (the carried items are ours to fix)
        return gate_problems(text, None, must_fit, estimate_text_tokens(text))

    first = completed_tail(ask(False, ()))
    structured = bool(first) and not missing_headings(first)
    if reused and not structured:
        raise NotReusable("the reply lacked the required sections")
    problems = gate_problems(first, previous, replaced, estimate_text_tokens(first)) if structured else []
    if structured and not problems:
        return first
    retry = ask(not structured, problems)
    retry_ok = bool(retry) and not missing_headings(retry) and not hard(retry)
    first_ok = structured and not hard(first)
    if not first_ok and not retry_ok and derived is not None:
        # Twice a section left as placeholders: the history's own account of it (as the model-free summary
        # has it) beats throwing the model's other sections away for the model-free summary.
        bodies = derived()
        first_fill = fill_answer(first if structured else "", bodies, hard)
        retry_fill = fill_answer(retry, bodies, hard)
        if (first_fill or retry_fill) and gate is not None:
            gate.append({"action": "filledWithoutModel", "sections": placeholder_sections(
                first if first_fill else retry)})
        first, first_ok = first_fill or first, bool(first_fill)
        retry, retry_ok = retry_fill or retry, bool(retry_fill)
    if not first_ok and not retry_ok:
        if not retry or missing_headings(retry):
            raise CompactionError("The model's summary lacked the required sections twice.")
        problems = hard(retry)
        if gate is not None:
            gate.append({"action": "rejected", "problems": problems})
        raise CompactionError("The model's summary failed the quality check twice: " + "; ".join(problems) + ".")
    chosen, record = better_answer(first if first_ok else None, retry if retry_ok else None, replaced)
    missing = missing_items(previous, chosen)
    if record["action"] == "retried" and not missing:
        record["passed"] = True
    if gate is not None:
        if record != {"action": "retried"}:  # a retry that only needed its carried items back says just that
            gate.append(record)
        if missing:
            gate.append({"action": "carriedForward", "items": {h: list(v) for h, v in missing.items()}})
    return merge_back(chosen, missing) if missing else chosen
