"""What both halves of ``pi-compact compact`` share: its flags and the settings fitted to a window.

``compact.py`` (reading the file, the dry run) and ``compact_run.py`` (the model run) both import
this module and never each other's names, so the command has no import circle.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pi_compact.compaction.plan import plan_for_window
from pi_compact.settings import Settings


@dataclass(frozen=True)
class CompactOptions:
    """The command's flags."""

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
    """Start-up warnings go to stderr: stdout is the report (or its JSON)."""
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")


def window_for(context_window: int | None, model: str | None, settings: Settings, *, api_base: str | None = None,
               api_key: str | None = None) -> int | None:
    """The window a command checks against: ``--context-window``, else the model's (``--model`` or the
    default); None when neither names one."""
    if context_window is not None:
        return context_window
    if model is None and settings.default_model is None:
        return None
    from pi_compact.llm.resolve import resolve_model

    return resolve_model(model, api_base=api_base, api_key=api_key, context_window=None,
                         settings=settings).context_window


def fitted_settings(
    settings: Settings, window: int, model: str | None, sources: Mapping[str, str] | None
) -> Settings:
    """The settings with budgets that fit ``window``; says which values were replaced, and why."""
    fitted = plan_for_window(settings, window, model=model, sources=sources)
    warn(fitted.warnings)
    return fitted.settings


__all__ = ["CompactOptions", "fitted_settings", "warn", "window_for"]
