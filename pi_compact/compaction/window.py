"""The budgets in force for one conversation, as one value (pure): ``WindowPlan``.

``plan_window`` is the one way from its inputs (a model's facts, the settings, the thinking level in force,
what every request carries) to the figures every decision reads: the window, the reserve and the keep figure
(``reserveTokens``/``keepRecentTokens`` fitted to the window, with a warning for each value a user set that
had to be replaced), the output cap every chat request sends (``max_tokens``, the thinking budget inside
it), the thinking budget, the answer room after it, and the threshold. A session holds one plan and
rebuilds it only when an input changes (``agent.session``); nothing else computes these figures.

The cap and the budget stay fixed for as long as the plan holds, so no request of a conversation changes
them: Anthropic drops its cached messages whenever the thinking settings change, and a cap sized from each
request's prompt made the budget change near the window (issue 43). The cap is what ``reserveTokens``
leaves after the estimate's margin, or more where a thinking budget needs it (the budget plus
``ANSWER_FLOOR`` for the answer), never more than pi asks for or the model can give; the threshold then
leaves the cap and the margin free beside the prompt, so a context is made smaller (clearing, then a
compaction) before the cap or the budget would have to shrink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.threshold import fit_to_window
from pi_compact.llm.output_cap import CHAT_CEILING, MIN_ANSWER, MIN_BUDGET, estimate_margin
from pi_compact.llm.thinking import ANTHROPIC_BUDGETS, thinking_budget
from pi_compact.model_facts import ModelInfo
from pi_compact.providers import GOOGLE
from pi_compact.settings import Settings

# Room for the answer after a whole thinking budget, where ``reserveTokens`` leaves less (with the default
# 16,384 on a 200k window the reserve leaves 12,384, so a medium budget of 8,192 would leave 4,192: a long
# ``write`` would be cut off); a sixteenth of a smaller window. More room moves the threshold down by as much.
ANSWER_FLOOR = 8_192
# The least cap planned where the reserve leaves less (a tiny reserveTokens on a small window): answers that
# short still fit beside a prompt at the threshold, which stays where the reserve puts it.
MIN_OUTPUT = 256
_GEMINI_MIN_BUDGET = 128


@dataclass(frozen=True)
class WindowPlan:
    """The budgets in force: one value for every figure, trigger, clearing step and request.

    ``facts`` None: the model is still resolving (its window unknown): no cap is planned (the model layer
    sizes the request itself) and nothing triggers. ``level`` is the thinking level in force.
    """

    settings: Settings  # fitted to the window: the reserve and keep figures in force
    facts: ModelInfo | None
    level: str | None = None
    output_cap: int = 0  # ``max_tokens`` of every chat request, the thinking budget inside (0: not planned)
    thinking_budget: int = 0  # the tokens of thinking every chat request asks for (0: none, or by effort)
    margin: int = 0  # what the window keeps free for the estimate's error
    warnings: tuple[str, ...] = ()

    @property
    def window(self) -> int:
        return self.facts.context_window if self.facts is not None else 0

    @property
    def reserve(self) -> int:
        return self.settings.compaction.reserve_tokens

    @property
    def keep(self) -> int:
        return self.settings.compaction.keep_recent_tokens

    @property
    def answer_room(self) -> int:
        """What the cap leaves for the answer after a whole thinking budget."""
        return self.output_cap - self.thinking_budget

    @property
    def headroom(self) -> int:
        """What a request must leave free beside its prompt: the cap and the estimate's margin."""
        return self.output_cap + self.margin if self.output_cap else 0

    @property
    def budgets(self) -> Budgets:
        return Budgets.of(self.settings.compaction, self.window, self.headroom)

    @property
    def threshold(self) -> int:
        """Context tokens past which (strictly) compaction runs; 0 while the window is unknown."""
        return self.budgets.known_threshold

    @property
    def soft_threshold(self) -> int:
        return self.budgets.soft_threshold

    def fits(self, prompt_tokens: int) -> bool:
        """Does a prompt of ``prompt_tokens`` leave the cap and the margin inside the window?"""
        return self.window <= 0 or prompt_tokens + self.headroom <= self.window

    def plan(self, branch: Sequence[Mapping[str, Any]]) -> CompactionPlan | None:
        """What a compaction of ``branch`` would summarize and keep with these budgets."""
        return prepare_compaction(branch, self.settings.compaction)


def plan_window(
    settings: Settings, facts: ModelInfo | None, level: str | None = None, *, window: int | None = None,
    model: str | None = None, sources: Mapping[str, str] | None = None, fixed_tokens: int = 0,
) -> WindowPlan:
    """The plan for ``facts``' model at thinking ``level`` (``window``: another window than the facts', as
    ``compact --context-window`` gives; ``model``: the name the warnings give, else the facts'; ``sources``:
    where each setting was set, which the warnings name; ``fixed_tokens``: what every request carries, when
    known). Without facts only the settings are fitted (to ``window``): no cap is planned."""
    size = window if window is not None else facts.context_window if facts is not None else 0
    name = model if model is not None or facts is None else facts.model
    fitted, warnings = fit_to_window(settings, size, model=name, sources=sources, fixed_tokens=fixed_tokens)
    if facts is None or size <= 0:
        return WindowPlan(fitted, facts, level, warnings=tuple(warnings))
    if facts.context_window != size:
        facts = replace(facts, context_window=size)
    margin = estimate_margin(size)
    cap, budget = _cap(facts, level, fitted.compaction.reserve_tokens - margin, min(ANSWER_FLOOR, size // 16))
    return WindowPlan(fitted, facts, level, cap, budget, margin, tuple(warnings))


def _cap(facts: ModelInfo, level: str | None, reserved: int, floor: int) -> tuple[int, int]:
    """The output cap and thinking budget of every chat request, ``reserved`` being the reserve less the margin
    and ``floor`` the answer's room after a whole budget."""
    budget = thinking_budget(facts, level) if facts.reasoning else 0
    # A model that reasons by effort has no budget to send, but its reasoning is counted in the cap too:
    # it is sized as a budget of that level would be.
    thought = budget or (ANTHROPIC_BUDGETS.get(level or "", 0) if facts.reasoning else 0)
    room = max(MIN_OUTPUT, reserved)
    # With thinking the answer after a whole budget gets at least ``MIN_ANSWER`` whatever the reserve leaves.
    cap = max(room, thought + max(MIN_ANSWER, min(room, floor))) if thought else room
    ceiling = min(facts.max_output_tokens or CHAT_CEILING, CHAT_CEILING) + budget  # what pi asks for
    if facts.max_output_tokens:
        ceiling = min(ceiling, facts.max_output_tokens)
    cap = min(cap, ceiling)
    if budget:
        budget = min(budget, cap - MIN_ANSWER)
        if budget < (_GEMINI_MIN_BUDGET if facts.api == GOOGLE else MIN_BUDGET):
            budget = 0  # too little room for thinking: the requests go without it
    return cap, budget


__all__ = ["ANSWER_FLOOR", "WindowPlan", "plan_window"]
