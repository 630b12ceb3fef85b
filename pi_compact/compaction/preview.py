"""A dry-run report: what compacting a session would do right now, as JSON-ready data (pure).

The report's JSON can be many MB (the serialized history is most of the session's text), so
``DryRun.json_chunks`` yields it in UTF-8 pieces, escaping the serialized texts a chunk at a time;
the pieces concatenate to exactly ``dumps_json`` of the whole report object, encoded. The path may
hold message digests (``compaction/digest.py``), whose texts are used as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.compaction.calibration import calibrate, calibrated
from pi_compact.compaction.digest import digest_estimator, serialized_text
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.serialize import conversation_chunks
from pi_compact.compaction.threshold import should_compact
from pi_compact.compaction.tokens import UNCALIBRATED, Calibration, Estimator, estimate_context_tokens, estimator_for
from pi_compact.jstext import dumps_json, json_string_body_utf8
from pi_compact.messages import Message
from pi_compact.session.context import fresh_start, project_path
from pi_compact.settings import CompactionSettings


@dataclass(frozen=True)
class DryRun:
    """The context size, the threshold verdict, the roles the model sees, and the plan (or None)."""

    context_tokens: int
    should_compact: bool
    context_roles: tuple[str, ...]
    plan: CompactionPlan | None
    calibration: Calibration | None = None  # with the ``auto`` estimator only (``chars4`` reports as pi)

    def report(self) -> dict[str, Any]:
        """The report object without its two serialized texts (all that a human view shows).

        ``calibration`` (``auto`` only) comes before ``plan``, which must stay last (``json_chunks``).
        """
        report: dict[str, Any] = {
            "context_tokens": self.context_tokens,
            "should_compact": self.should_compact,
            "context_roles": list(self.context_roles),
        }
        if self.calibration is not None:
            report["calibration"] = {"factor": round(self.calibration.factor, 4), "replies": self.calibration.replies}
        report["plan"] = None if self.plan is None else _plan_keys(self.plan)
        return report

    def json_chunks(self) -> Iterator[bytes]:
        """The whole report as compact JSON, UTF-8 encoded, in pieces (the plan ends with
        ``serialized_history`` and ``serialized_turn_prefix``)."""
        head = dumps_json(self.report()).encode("utf-8")
        if self.plan is None:
            yield head
            return
        yield head[:-2]  # open at the end of the plan's keys: the texts follow, then "}}"
        yield b',"serialized_history":"'
        yield from _string_body(self.plan.messages_to_summarize)
        yield b'","serialized_turn_prefix":"'
        yield from _string_body(self.plan.turn_prefix_messages)
        yield b'"}}'


def _plan_keys(plan: CompactionPlan) -> dict[str, Any]:
    return {
        "first_kept_entry_id": plan.first_kept_entry_id,
        "is_split_turn": plan.is_split_turn,
        "tokens_before": plan.tokens_before,
        "summarize_entry_ids": list(plan.summarize_entry_ids),
        "turn_prefix_entry_ids": list(plan.turn_prefix_entry_ids),
        "previous_summary": plan.previous_summary,
        "read_files": list(plan.read_files),
        "modified_files": list(plan.modified_files),
    }


def _string_body(messages: Iterable[Message]) -> Iterator[bytes]:
    """The serialized conversation of ``messages``, escaped as the inside of a JSON string."""
    for chunk in conversation_chunks(map(serialized_text, messages)):
        yield json_string_body_utf8(chunk)


def dry_run(
    path: Sequence[Mapping[str, Any]],
    settings: CompactionSettings,
    context_window: int,
    estimator: Estimator | None = None,
) -> DryRun:
    """What compacting the root-first ``path`` would do now.

    ``estimator`` defaults to the settings' one; a path holding digests needs the estimator of the
    reader that made them (``BranchTail.estimator``).

    With ``auto`` the context's size is calibrated by the path's replies, as a live session on it
    would count it; the plan (cut point, ``tokens_before``) is not, so it stays what ``compact``
    would do. ``chars4`` is pi's dry run exactly.
    """
    estimate = estimator if estimator is not None else digest_estimator(estimator_for(settings.token_estimator), None)
    context = project_path(path)
    calibration = None
    if settings.token_estimator == "auto":
        calibration = calibrate(context.messages, estimate, fresh_from=fresh_start(path, context))
    tokens = estimate_context_tokens(context.messages, calibrated(estimate, calibration or UNCALIBRATED)).tokens
    return DryRun(
        context_tokens=tokens,
        should_compact=should_compact(tokens, context_window, settings),
        context_roles=tuple([str(m.get("role")) for m in context.messages]),
        plan=prepare_compaction(path, settings, estimate, context),
        calibration=calibration,
    )
