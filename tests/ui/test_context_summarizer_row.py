"""``/context`` says which model writes the summaries and whether they are made in the background."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, make_model_harness
from rich.console import Console

from pi_compact.ui.status import context_report


def _context_text(tmp_path: Path, **compaction: object) -> str:
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, **compaction))
    h = make_model_harness(tmp_path, settings=settings)
    console = Console(record=True, width=200)
    console.print(context_report(h.session, "scripted"))
    return " ".join(console.export_text().split())


def test_context_says_the_chat_model_writes_summaries_by_default(tmp_path: Path) -> None:
    assert "Summarizer the chat model Estimator" in _context_text(tmp_path)


def test_context_names_the_compaction_model_and_the_background_start(tmp_path: Path) -> None:
    text = _context_text(tmp_path, model="openai/gpt-4o-mini", background=True, soft_threshold_percent=60)
    assert "Summarizer openai/gpt-4o-mini · in the background from 60 % of the threshold" in text
