"""What a command line chose, resolved once, with the warnings on stderr (stdout is the answer or report).

``load_settings`` reads the settings files once per run; ``choose_model`` turns ``--model`` and the
settings into the model the run starts with; ``fitted_settings`` fits the budgets to a window.
``CompactOptions`` are the flags of ``compact``, shared by its dry run and its model run.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_compact.settings import Settings

if TYPE_CHECKING:
    from pi_compact.settings.files import LoadedSettings
    from pi_compact.settings.trust import TrustPolicy


@dataclass(frozen=True)
class CompactOptions:
    """The flags of ``compact``; ``model`` already resolved by ``choose_model``."""

    session: Path
    dry_run: bool = False
    as_json: bool = False
    context_window: int | None = None
    instructions: str | None = None
    model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    no_fallback: bool = False  # refuse the model-free summary: a failed model fails the command


def warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")


def load_settings(cwd: Path, overrides: Mapping[str, Any], trust: TrustPolicy | None = None) -> LoadedSettings:
    """The settings files merged with the flags' ``overrides``; their problems said as warnings.

    ``trust`` decides whether a project's risky keys apply (``settings.trust``); None: only a remembered answer.
    """
    from pi_compact.settings.files import load_settings as load

    loaded = load(cwd, dict(overrides), trust=trust)
    warn(loaded.warnings)
    return loaded


def choose_model(flag: str | None, settings: Settings) -> str | None:
    """The model a run starts with: ``--model``, else the settings' ``defaultModel`` (with its provider).

    None when neither names one: the model layer then takes the embedded model or says none is set,
    when a model is first needed. Every later use reads this value, not the flag again.
    """
    if flag:
        return flag
    if not settings.default_model:
        return None
    from pi_compact.llm.resolve import model_string  # only now: the dry run needs no model layer

    return model_string(None, settings)


def fitted_settings(
    settings: Settings, window: int, model: str | None, sources: Mapping[str, str] | None
) -> Settings:
    """The settings with budgets that fit ``window``; says which values were replaced, and why."""
    from pi_compact.compaction.window import plan_window

    fitted = plan_window(settings, None, window=window, model=model, sources=sources)
    warn(fitted.warnings)
    return fitted.settings


def command_window(context_window: int | None, model: str | None, settings: Settings, *,
                   api_base: str | None = None, api_key: str | None = None) -> int | None:
    """``window_for``, else the embedded model's window where the terminal would run it (no model and no
    provider key), so that ``compact`` and ``uncompact`` need the same flags as the terminal."""
    window = window_for(context_window, model, settings, api_base=api_base, api_key=api_key)
    if window is None:
        import os

        from pi_compact.llm.local.model import LOCAL_MODEL, choose_by_default

        if choose_by_default(os.environ):
            window = window_for(None, LOCAL_MODEL, settings)
    return window


def window_for(context_window: int | None, model: str | None, settings: Settings, *, api_base: str | None = None,
               api_key: str | None = None) -> int | None:
    """The window a command checks against: ``--context-window``, else the chosen model's; None without either."""
    if context_window is not None:
        return context_window
    if model is None:
        return None
    from pi_compact.llm.resolve import resolve_model

    return resolve_model(model, api_base=api_base, api_key=api_key, context_window=None,
                         settings=settings).context_window
