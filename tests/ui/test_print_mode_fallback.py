"""Print mode's text output says when a compaction's summary was built without the model (issue 23):
the JSON events carry ``details.fallback`` and the terminal shows it, so the text mode must say it too."""

from __future__ import annotations

import pytest

from pi_compact.agent.events import CompactionEnd
from pi_compact.ui.print_mode import PrintMode


def test_print_mode_text_output_reports_a_fallback_compaction(capsys: pytest.CaptureFixture[str]) -> None:
    result = {"summary": "s", "details": {"fallback": True, "error": "the summarizer timed out"}}
    PrintMode(as_json=False).emit(CompactionEnd("threshold", result))
    err = capsys.readouterr().err
    assert err == ("pi-compact: Auto-compaction: the summary was built without the model "
                   "(the summarizer timed out).\n")

