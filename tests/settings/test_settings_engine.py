"""``compaction.engine`` (issue 45): who writes a summary, "auto" by default, validated like every key, listed by
``/settings``; the pipeline does not act on it yet."""

from __future__ import annotations

from pathlib import Path

from agent_harness import make_model_harness
from rich.console import Console

from pi_compact.llm.protocol import ModelInfo
from pi_compact.options import AppOptions
from pi_compact.settings import CompactionSettings, Settings
from pi_compact.settings.files import DEFAULT_SOURCE, LoadedSettings
from pi_compact.settings.report import settings_items
from pi_compact.settings.schema import parse_settings
from pi_compact.ui.status import settings_table


def test_the_engine_defaults_to_auto() -> None:
    assert Settings().compaction.engine == "auto"


def test_each_engine_is_read_from_pis_layout() -> None:
    for engine in ("auto", "local", "provider"):
        settings, warnings = parse_settings({"compaction": {"engine": engine}})
        assert (settings.compaction.engine, warnings) == (engine, [])


def test_an_unknown_engine_is_ignored_with_a_warning_naming_the_key() -> None:
    settings, warnings = parse_settings({"compaction": {"engine": "server"}})
    assert settings.compaction.engine == "auto"
    assert warnings == ['Ignoring compaction.engine: expected "auto", "local" or "provider", got "server".']


def test_settings_shows_the_engine_and_its_source(tmp_path: Path) -> None:
    configured = Settings(compaction=CompactionSettings(token_estimator="chars4", engine="provider"))
    h = make_model_harness(tmp_path, settings=configured, info=ModelInfo("local", "local", 16_384, 1_024))
    sources = {key: DEFAULT_SOURCE for key, _ in settings_items(configured)}
    sources["compaction.engine"] = "/srv/project/.pi/settings.json"
    console = Console(record=True, width=240)
    console.print(settings_table(LoadedSettings(configured, (), sources), AppOptions(cwd=h.cwd), h.session, "local"))
    [row] = [line for line in console.export_text().splitlines() if line.strip().startswith("compaction.engine ")]
    assert " ".join(row.split()) == 'compaction.engine "provider" /srv/project/.pi/settings.json'
