"""``/settings`` shows the budgets in force: fitted to a small window, with that as their source, and the
same numbers ``/context`` shows in the same session."""

from __future__ import annotations

import re
from pathlib import Path

from agent_harness import make_model_harness
from rich.console import Console

from pi_compact.llm.protocol import ModelInfo
from pi_compact.options import AppOptions
from pi_compact.settings import CompactionSettings, Settings
from pi_compact.settings.files import DEFAULT_SOURCE, LoadedSettings
from pi_compact.settings.report import settings_items
from pi_compact.ui.status import context_report, settings_table

SMALL = ModelInfo("local", "local", 16_384, 1_024)
DEFAULTS = Settings(compaction=CompactionSettings(token_estimator="chars4"))


def _shown(tmp_path: Path) -> tuple[str, str]:
    h = make_model_harness(tmp_path, settings=DEFAULTS, info=SMALL)
    loaded = LoadedSettings(DEFAULTS, (), {key: DEFAULT_SOURCE for key, _ in settings_items(DEFAULTS)})
    console = Console(record=True, width=240)
    console.print(settings_table(loaded, AppOptions(cwd=h.cwd), h.session, "local"))
    settings_text = console.export_text()
    console.print(context_report(h.session, "local"))
    return settings_text, " ".join(console.export_text().split())


def _row(text: str, key: str) -> str:
    [line] = [line for line in text.splitlines() if line.strip().startswith(key + " ")]
    return " ".join(line.split())


def test_settings_shows_the_fitted_budgets_with_the_window_as_their_source(tmp_path: Path) -> None:
    settings_text, _ = _shown(tmp_path)
    assert _row(settings_text, "compaction.reserveTokens") == (
        'compaction.reserveTokens 4096 fitted to the 16,384-token window (configured: 16384, default)')
    assert _row(settings_text, "compaction.keepRecentTokens") == (
        'compaction.keepRecentTokens 6144 fitted to the 16,384-token window (configured: 20000, default)')
    assert _row(settings_text, "compaction.recallMaxTokens") == "compaction.recallMaxTokens 4000 default"


def test_settings_and_context_agree_on_every_budget(tmp_path: Path) -> None:
    settings_text, context_text = _shown(tmp_path)
    reserve = int(_row(settings_text, "compaction.reserveTokens").split()[1])
    keep = int(_row(settings_text, "compaction.keepRecentTokens").split()[1])
    match = re.search(r"Threshold ([\d,]+) tokens \(window − reserveTokens ([\d,]+)\)", context_text)
    assert match is not None, context_text
    assert int(match.group(2).replace(",", "")) == reserve
    assert int(match.group(1).replace(",", "")) == 16_384 - reserve
    assert f"Keep recent {keep:,} tokens (keepRecentTokens)" in context_text
