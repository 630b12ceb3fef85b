"""Moving on the session tree: ``/tree`` (optionally summarizing the branch left) and ``/uncompact``.

The twin of ``Compactor``: ``navigate`` emits exactly one ``TreeStart`` and one ``TreeEnd`` for a
move (none for a move to where the leaf already is), lets a ``session_before_tree`` hook cancel it,
supply the summary or change the instructions, and writes only when everything is ready: one
``branch_summary`` entry, or one position entry without a summary. A branch summary is written by
``compaction.model`` when one is named (``summarizer``), sized for it, and records its model and the
usage of its requests in ``details`` as a compaction does. A cancel or an error leaves the
file byte-identical and the leaf where it was.

``uncompact`` undoes the latest compaction of the branch by writing one entry after the entry before
it (see ``session/tree.py``), after checking that the restored context still fits the window and
that nothing written after the compaction would be dropped (``force`` overrides both). No UI imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from pi_compact import clock
from pi_compact.agent.compaction.summarizer import Summarizer, choose
from pi_compact.agent.events import SessionEvent, TreeEnd, TreeOutcome, TreeStart, UncompactOutcome
from pi_compact.agent.hooks import BeforeTreeEvent, TreeDecision
from pi_compact.cancel import CancelToken
from pi_compact.compaction.branch_summary import BranchSummary, summarize_branch
from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.clearing import cleared_on_path, project, result_entry_ids
from pi_compact.compaction.summarize import SummaryBudget
from pi_compact.compaction.tokens import estimate_context_tokens, estimator_for
from pi_compact.compaction.window import WindowPlan
from pi_compact.errors import Cancelled, CompactionError, PiCompactError
from pi_compact.llm.protocol import ChatModel
from pi_compact.session.context import project_path
from pi_compact.session.entries import Entry
from pi_compact.session.pins import fold_pins
from pi_compact.session.store import SessionStore
from pi_compact.session.tree import (
    abandoned_entries,
    branch_summary_fields,
    common_ancestor,
    landing,
    move_fields,
    plan_uncompact,
    uncompact_fields,
)
from pi_compact.settings import Settings


@runtime_checkable
class TreeHooks(Protocol):
    def before_tree(self, event: BeforeTreeEvent) -> TreeDecision | None: ...


@dataclass
class Navigator:
    """Moves of one session's leaf, with ``model`` for branch summaries (None: summaries impossible)
    unless ``summarizer`` (``compaction.model``) writes them."""

    store: SessionStore
    model: ChatModel | None
    settings: Settings
    emit: Callable[[SessionEvent], None] = lambda event: None
    hooks: TreeHooks | None = None
    now_ms: Callable[[], int] = clock.now_ms
    summarizer: Summarizer | None = None
    # The session's plan (``compaction.window``): the threshold /uncompact and a branch summary measure by is
    # the one compaction and clearing use. None: no session (``uncompact_store``), the settings' own.
    plan: WindowPlan | None = None

    # ---- /tree -----------------------------------------------------------------------------------

    def navigate(
        self, target_id: str, *, summarize: bool = False, instructions: str | None = None,
        replace_instructions: bool = False, cancel: CancelToken | None = None,
    ) -> TreeOutcome | None:
        """Move the leaf to ``target_id`` (pi's navigateTree); None when cancelled or failed (see TreeEnd).

        Raises ``SessionError`` for an unknown id and ``CompactionError`` when a summary is asked for
        without a model; both before anything starts.
        """
        old = self.store.leaf_id
        target = self.store.by_id.get(target_id)
        if target is None:
            raise CompactionError(f"Entry {target_id} is not in this session; /tree lists the entries to move to.")
        if target_id == old:
            return TreeOutcome(old, old, old)
        if summarize and self.model is None:
            raise CompactionError("Summarizing the branch needs a model; move without a summary or pick a model.")
        token = cancel or CancelToken()
        leaving = abandoned_entries(self.store.by_id, old, target_id)
        event = BeforeTreeEvent(target_id, old, common_ancestor(self.store.by_id, old, target_id), leaving,
                                summarize, instructions, replace_instructions, token)
        self.emit(TreeStart(target_id, summarize))
        try:
            outcome = self._move(target, event, token)
        except (Cancelled, KeyboardInterrupt):
            self.emit(TreeEnd(None, aborted=True))
            return None
        except PiCompactError as exc:
            self.emit(TreeEnd(None, error_message=f"The move was not made: {exc}"))
            return None
        except OSError as exc:
            self.emit(TreeEnd(None, error_message=f"The move was not made: {exc.strerror or exc}."))
            return None
        except Exception as exc:
            self.emit(TreeEnd(None, error_message=f"The move was not made: unexpected error {exc!r}."))
            raise
        self.emit(TreeEnd(outcome))
        return outcome

    def _move(self, target: Entry, event: BeforeTreeEvent, cancel: CancelToken) -> TreeOutcome:
        summary: BranchSummary | None = None
        from_hook = False
        if self.hooks is not None:
            decision = self.hooks.before_tree(event)
            if decision is not None and decision.cancel:
                raise Cancelled("The move was cancelled by an extension.")
            if decision is not None:
                event = replace(
                    event,
                    instructions=decision.instructions if decision.instructions is not None else event.instructions,
                    replace_instructions=event.replace_instructions if decision.replace_instructions is None
                    else decision.replace_instructions,
                )
                if decision.summary and event.user_wants_summary:
                    summary = BranchSummary(decision.summary, dict(decision.details or {}), "extension")
                    from_hook = True
        if summary is None and event.user_wants_summary and event.entries_to_summarize:
            summary = self._summarize(event, cancel)
        if cancel.cancelled:
            raise Cancelled("The move was cancelled; nothing was written.")
        land = landing(target)
        if summary is not None:
            fields = branch_summary_fields(land.position, summary.summary, summary.details, from_hook)
        else:
            fields = move_fields(str(target.get("id")))
        entry = self._append_at(land.position, fields)
        return TreeOutcome(
            event.old_leaf_id, land.position, str(entry["id"]), summary.summary if summary else None,
            summary.source if summary else None, len(event.entries_to_summarize), land.resend_text,
            summary.details if summary else None,
        )

    def _summarize(self, event: BeforeTreeEvent, cancel: CancelToken) -> BranchSummary:
        assert self.model is not None
        if cancel.cancelled:
            raise Cancelled("The move was cancelled; nothing was written.")
        chosen = choose(self.model, self.summarizer)
        info = chosen.meter.info
        compaction = self.settings.compaction
        budget = SummaryBudget.for_model(info.context_window, info.max_output_tokens, compaction.reserve_tokens)
        summary = chosen.run(lambda: summarize_branch(
            event.entries_to_summarize, chosen.meter, budget,
            token_budget=max(0, self._budgets(info.context_window).threshold),
            estimate=estimator_for(compaction.token_estimator), instructions=event.instructions,
            replace_instructions=event.replace_instructions, cancel=cancel,
        ))
        return replace(summary, details=chosen.record(summary.details))

    def _budgets(self, window: int) -> Budgets:
        """The plan's budgets when it is of this window, else the settings' own on ``window``."""
        if self.plan is not None and self.plan.window == window:
            return self.plan.budgets
        return Budgets.of(self.settings.compaction, window)

    def _append_at(self, position: str | None, fields: Mapping[str, Any]) -> Entry:
        """Append ``fields`` as a child of ``position``; on failure the leaf goes back where it was."""
        old = self.store.leaf_id
        self.store.move_leaf(position)
        try:
            return self.store.append(fields, self.now_ms())
        except BaseException:
            self.store.move_leaf(old)
            raise

    # ---- /uncompact ------------------------------------------------------------------------------

    def uncompact(self, *, force: bool = False, context_window: int | None = None) -> UncompactOutcome:
        """Undo the latest compaction of the branch; raises ``CompactionError`` (one sentence) to refuse."""
        plan = plan_uncompact(self.store.branch(), self.store.by_id)
        if plan is None:
            raise CompactionError("Nothing to uncompact: the current branch has no compaction.")
        compaction = self.settings.compaction
        # As the next request would carry it: tool results cleared on that path stay cleared there.
        path = plan.restored_path
        restored = project(project_path(path).messages, result_entry_ids(path), cleared_on_path(path))
        tokens = estimate_context_tokens(restored, estimator_for(compaction.token_estimator)).tokens
        window = context_window if context_window is not None else _window_of(self.model)
        threshold = self._budgets(window).threshold if window else None
        if not force and plan.left_behind:
            raise CompactionError(
                f"{plan.left_behind} message{'s' if plan.left_behind != 1 else ''} came after compaction "
                f"{plan.compaction_id}; undoing it goes back to before it, so they would leave the context "
                "(they stay in the file, reachable with /tree). Use --force to uncompact anyway."
            )
        if not force and window and tokens > window:
            raise CompactionError(
                f"The context before compaction {plan.compaction_id} is about {tokens:,} tokens and no longer "
                f"fits the {window:,}-token window, so it was not restored. Use --force to restore it anyway "
                "(the next request would overflow and compact again)."
            )
        kept_pins = {pin.entry_id for pin in fold_pins(plan.restored_path)}
        dropped = tuple(pin.text for pin in fold_pins(self.store.branch()) if pin.entry_id not in kept_pins)
        self._append_at(plan.position, uncompact_fields(plan))
        return UncompactOutcome(plan.compaction_id, plan.position, tokens, window, threshold, plan.left_behind,
                                dropped)


def _window_of(model: ChatModel | None) -> int | None:
    """The model's window; None without a usable model (then only ``force`` restores, unchecked)."""
    try:
        return model.info.context_window if model is not None else None
    except PiCompactError:
        return None


__all__ = ["BeforeTreeEvent", "Navigator", "TreeDecision", "TreeHooks"]
