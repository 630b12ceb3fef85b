"""What a chat request carries besides its messages and tools, per provider (pure).

``plan_request(info, request, api_base=...).options`` are the keyword arguments of one litellm call
(the direct OpenAI-compatible client sends the same keys, those it knows, in its body):

- ``max_tokens``: the request's own (a session's planned cap, the same on every chat request, with its
  ``thinking_budget`` inside it: ``compaction.window``), else the cap of ``output_cap`` (pi's number,
  lowered to fit).
- Thinking (``request.thinking_level``): Anthropic gets an explicit
  ``thinking={"type": "enabled", "budget_tokens": B}`` with pi's budget inside ``max_tokens`` (litellm's
  own ``reasoning_effort`` mapping gives far smaller budgets); Gemini 2.5 the same (litellm turns it
  into ``thinkingConfig.thinkingBudget``), other Gemini models and OpenAI-style providers
  ``reasoning_effort``. "off" sends nothing where thinking is off by default or cannot be turned off
  (Gemini 2.5 Pro refuses a zero budget), and ``reasoning_effort="none"`` to Gemini models that think
  unless told not to.
- ``prompt_cache_key``: the session id, on OpenAI's own endpoint, unless caching is "none" (pi).
- ``extra_headers``: ``anthropic-beta: interleaved-thinking-2025-05-14`` when a Claude 4 model thinks in a
  request with tools, so it may think between tool calls. Our thinking is always the budgeted kind, which
  interleaves only with the beta, also on Sonnet 4.6 (Opus 4.6 ignores it). pi leaves it out on 4.6 and
  later, where it asks for adaptive thinking (that interleaves by itself), and sends it on every other request.

``refit_on_refusal`` sends a request once more when the cap chosen here was refused for prompt + output
over the window: the refusal states the true prompt size, so the request need not be compacted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pi_compact import providers
from pi_compact.llm.output_cap import MIN_ANSWER, MIN_BUDGET, OutputCap, output_cap, prompt_estimate, refit_cap
from pi_compact.llm.protocol import ChatRequest, Done, ModelInfo, StreamEvent
from pi_compact.llm.thinking import LEVELS, supported_levels, thinking_budget

RETENTIONS = ("none", "short", "long")
_GEMINI_MIN_BUDGET = 128
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
# Claude 4 model ids: claude-sonnet-4-20250514, claude-opus-4-1, claude-haiku-4-5, claude-sonnet-4-6...
# (Claude 3.7 cannot interleave; Anthropic documented the beta as failing a request to other models).
_CLAUDE_4 = re.compile(r"claude-(?:opus|sonnet|haiku)-4(?![0-9])")
_OPENAI_EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}


@dataclass(frozen=True)
class RequestPlan:
    """What one request asks of the provider besides the conversation."""

    cap: OutputCap | None  # None: the caller's own ``max_tokens`` is sent as is
    max_tokens: int
    level: str | None
    options: Mapping[str, Any]


def cache_retention(request: ChatRequest, environ: Mapping[str, str] | None = None) -> str:
    """pi's ``resolveCacheRetention``: the request's choice; "short" (the default) turns "long" when
    ``PI_CACHE_RETENTION=long`` is set; anything unknown is "short"."""
    environ = os.environ if environ is None else environ
    chosen = request.cache if request.cache in RETENTIONS else "short"
    if chosen == "short" and environ.get("PI_CACHE_RETENTION") == "long":
        return "long"
    return chosen


def plan_request(info: ModelInfo, request: ChatRequest, *, api_base: str | None = None) -> RequestPlan:
    """The options of one request to ``info``'s model at ``api_base`` (None: the provider's own)."""
    level = request.thinking_level
    level = level if level in LEVELS else None
    api = info.api
    # Budgets only for a model that can think: Anthropic and Gemini refuse thinking from the others.
    budget = thinking_budget(info, level) if info.reasoning else 0
    min_budget = _GEMINI_MIN_BUDGET if api == providers.GOOGLE else MIN_BUDGET
    cap: OutputCap | None = None
    if request.max_tokens is not None and request.thinking_inside:  # a planned or refitted cap: thinking inside
        max_tokens = request.max_tokens
        if request.thinking_budget is not None and budget:
            budget = request.thinking_budget  # the conversation's plan: the same on every request
        budget = min(budget, max_tokens - MIN_ANSWER)
        budget = budget if budget >= min_budget else 0
    elif request.max_tokens is not None:  # the caller's number (a summary's): all of it stays the answer's
        max_tokens, budget = _on_top(info, request, budget, min_budget)
    else:
        cap = output_cap(
            max_output=info.max_output_tokens, context_window=info.context_window,
            prompt_tokens=prompt_estimate(request, info), thinking_budget=budget, min_budget=min_budget,
        )
        max_tokens, budget = cap.max_tokens, cap.thinking_budget
    options: dict[str, Any] = {"max_tokens": max_tokens}
    if level is not None:
        options.update(_thinking_options(info, level, budget))
    if "thinking" in options and request.tools and interleaves_with_beta(info):
        options["extra_headers"] = {"anthropic-beta": INTERLEAVED_THINKING_BETA}
    if _openai_endpoint(info, api_base) and cache_retention(request) != "none" and request.session_id:
        options["prompt_cache_key"] = request.session_id
    return RequestPlan(cap, max_tokens, level, options)


def _on_top(info: ModelInfo, request: ChatRequest, budget: int, min_budget: int) -> tuple[int, int]:
    """``max_tokens`` and the thinking budget for a request with its own output size (a summary's).

    As pi does, the thinking budget comes on top of that size, so thinking never eats the summary; the
    model's output limit, then the room the window leaves after the prompt, shrink the budget only
    (below ``min_budget`` the request goes without thinking), never the caller's size.
    """
    own = request.max_tokens or 0
    if budget <= 0:
        return own, 0
    budget = min(budget, info.max_output_tokens - own) if info.max_output_tokens else budget
    estimate = output_cap(max_output=None, context_window=info.context_window, prompt_tokens=prompt_estimate(
        request, info), ceiling=own + budget)
    budget = min(budget, estimate.max_tokens - own)
    if budget < min_budget:
        return own, 0
    return own + budget, budget


def _thinking_options(info: ModelInfo, level: str, budget: int) -> dict[str, Any]:
    api = info.api
    if api == providers.ANTHROPIC:
        if level == "off" or budget <= 0:
            return {}
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    if api == providers.GOOGLE:
        if not info.reasoning:
            return {}
        if level == "off":  # budget 0; a model that cannot stop thinking refuses it, so it gets nothing
            return {"reasoning_effort": "none"} if "off" in supported_levels(info) and info.reasoning else {}
        if budget > 0:
            return {"thinking": {"type": "enabled", "budget_tokens": budget}}
        return {"reasoning_effort": "high" if level == "xhigh" else level}
    if level == "off":
        return {}
    if info.reasoning_effort is not None:  # a models.json model: pi's rule, sent only to a reasoning model
        return {"reasoning_effort": _OPENAI_EFFORTS[level]} if info.reasoning and info.reasoning_effort else {}
    if level == "xhigh" and "xhigh" not in supported_levels(info):
        level = "high"  # OpenAI refuses an effort the model does not know
    # Sent also where litellm's map says nothing about reasoning (a local or new model): ``drop_params``
    # lets litellm leave it out for a model that has no such knob.
    return {"reasoning_effort": _OPENAI_EFFORTS[level], "drop_params": True}




@dataclass(frozen=True)
class CachePrices:
    """What a provider's prompt cache costs, as multiples of the input price, and how it holds prefixes."""

    read: float
    write: float
    marked: bool  # only the prefixes a request marks (Anthropic's breakpoints); else any prefix it was sent
    lifetime_ms: int  # how long an entry lives after its last use (0: nothing is held)


NO_CACHE = CachePrices(1.0, 1.0, False, 0)  # a provider that holds nothing: every token at the input price


def cache_prices(info: ModelInfo, request: ChatRequest) -> CachePrices:
    """The prompt cache ``request`` meets on ``info``'s provider: the model's own prices when it has them
    (``ModelInfo.costs``), else the provider's usual ratios (Anthropic: reads 0.1x, writes 1.25x for five
    minutes, 2x for an hour; implicit caches: reads 0.25x, no write premium, about five minutes)."""
    retention = cache_retention(request)
    if retention == "none":
        return NO_CACHE
    costs = info.costs or {}
    unit = float(costs.get("input") or 0.0)

    def ratio(key: str, usual: float) -> float:
        value = float(costs.get(key) or 0.0)
        return value / unit if unit > 0 and value > 0 else usual

    if info.api == providers.ANTHROPIC:
        long = retention == "long"
        return CachePrices(ratio("cacheRead", 0.1), ratio("cacheWrite1h", 2.0) if long else ratio("cacheWrite", 1.25),
                           True, 3_600_000 if long else 300_000)
    return CachePrices(ratio("cacheRead", 0.25), 1.0, False, 300_000)


def prefix_by_default(info: ModelInfo, api_base: str | None) -> bool:
    """Does the provider serve a request that starts like the last one from its prompt cache (so
    ``compaction.reusePrefix: auto`` asks summaries on the chat prefix)?"""
    # Anthropic from our cache breakpoints, Google and DeepSeek implicitly (``providers.caches_prefix``);
    # OpenAI's own endpoint too, while an OpenAI-compatible server elsewhere may or may not.
    return providers.by_name(info.provider).caches_prefix or _openai_endpoint(info, api_base)


def interleaves_with_beta(info: ModelInfo) -> bool:
    """Is ``info`` a Claude 4 model on Anthropic's API (whose budgeted thinking interleaves with the beta)?"""
    return info.api == providers.ANTHROPIC and _CLAUDE_4.search(info.model_id.lower()) is not None


def _openai_endpoint(info: ModelInfo, api_base: str | None) -> bool:
    """OpenAI's own API, where ``prompt_cache_key`` is known (pi sends it only there)."""
    row = providers.by_name(info.provider)
    return row.cache_key and (api_base is None or any(host in api_base for host in row.hosts))


def refit_on_refusal(
    info: ModelInfo, request: ChatRequest, api_base: str | None,
    send: Callable[[ChatRequest], Iterator[StreamEvent]],
) -> Iterator[StreamEvent]:
    """``send(request)``'s events, unless they end in a refusal of the cap ``plan_request`` chose that
    ``refit_cap`` can fit: then the request goes once more with that cap (a last resort for a planned cap:
    the estimate that kept the prompt under the threshold was wrong). A request with its own answer size
    (a summary's) is never resent (its caller chose the number)."""
    events = send(request)  # now: a problem found before sending raises from the adapter's stream()
    if request.max_tokens is not None and not request.thinking_inside:
        return events
    return _refitted(events, info, request, api_base, send)


def _refitted(
    events: Iterator[StreamEvent], info: ModelInfo, request: ChatRequest, api_base: str | None,
    send: Callable[[ChatRequest], Iterator[StreamEvent]],
) -> Iterator[StreamEvent]:
    for event in events:
        message = event.message if isinstance(event, Done) else None
        if message is not None and message.get("stopReason") == "error" and not message.get("content"):
            sent = plan_request(info, request, api_base=api_base).max_tokens  # the cap the adapter sent
            fitted = refit_cap(str(message.get("errorMessage") or ""), sent)
            if fitted is not None:
                yield from send(replace(request, max_tokens=fitted, thinking_inside=True))
                return
        yield event
