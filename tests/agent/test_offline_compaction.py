"""Headless compaction (``agent/compaction/offline.py``) called directly, with a scripted model.

What ``pi-compact compact FILE`` does besides parsing and printing: open the file, fit, plan, build the
model through the seam, run the one pipeline, and count the figures as the terminal does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from builders import coding_session, compaction_settings, structured_summary, write_session

from pi_compact.agent.compaction.offline import OfflineJob, OfflineListener, OfflineOutcome, compact_offline
from pi_compact.agent.events import SessionEvent
from pi_compact.agent.tools import Tool
from pi_compact.llm.protocol import ChatModel, ModelInfo
from pi_compact.llm.scripted import ScriptedModel
from pi_compact.settings import Settings

INFO = ModelInfo("test/scripted", "test", 128_000, None)


class Models:
    """The seam, answering with one scripted model and recording what was asked of it."""

    def __init__(self, *replies: str) -> None:
        self.model = ScriptedModel(INFO, *replies)
        self.resolved = 0

    def resolve(self, settings: Settings) -> ModelInfo:
        self.resolved += 1
        return INFO

    def build(self, info: ModelInfo, settings: Settings) -> ChatModel:
        return self.model

    def summarizer(self, name: str, chat_model: str, settings: Settings) -> ChatModel:
        raise AssertionError("no compaction.model is set")


def run(path: Path, models: Models, prompt: str = "", keep: int = 400) -> tuple[OfflineOutcome, list[str]]:
    asked: list[str] = []

    def system_prompt(tools: Sequence[Tool]) -> str:
        asked.extend(tool.name for tool in tools)
        return prompt

    events: list[SessionEvent] = []
    listener = OfflineListener(warn=lambda texts: None, starting=lambda writer: None, emit=events.append)
    outcome = compact_offline(OfflineJob(path, path.parent), compaction_settings(keep=keep), models, system_prompt,
                              listener)
    return outcome, asked


def test_offline_compaction_appends_one_summary_written_by_the_model(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    before = write_session(path, coding_session())
    models = Models(structured_summary("offline"))
    outcome, tools = run(path, models)
    assert outcome.not_needed is None and outcome.end is not None and outcome.end.result is not None
    added = path.read_bytes()[len(before):].splitlines()
    assert path.read_bytes().startswith(before) and len(added) == 1
    entry = json.loads(added[0])
    assert (entry["type"], entry["firstKeptEntryId"]) == ("compaction", "test-id-10")
    assert "Ship the feature offline" in entry["summary"]
    assert len(models.model.history) == 1  # one summary request, to the model the seam built
    assert tools == ["read", "write", "edit", "bash", "ls", "grep", "find", "recall"]


def test_the_after_figure_counts_the_system_prompt_the_next_request_carries(tmp_path: Path) -> None:
    figures = []
    for prompt in ("", "x" * 8000):  # 8,000 characters: 2,000 tokens by the chars/4 estimate
        path = tmp_path / f"s{len(prompt)}.jsonl"
        write_session(path, coding_session())
        outcome, _ = run(path, Models(structured_summary()), prompt)
        assert outcome.end is not None and outcome.end.result is not None
        figures.append(int(outcome.end.result["estimatedTokensAfter"]))
    assert figures[1] - figures[0] == 2000


def test_nothing_to_compact_is_answered_without_resolving_the_model_and_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    before = write_session(path, coding_session())
    models = Models()
    outcome, _ = run(path, models, keep=100_000)
    assert outcome.end is None and outcome.not_needed is not None
    assert "--keep-recent-tokens" in outcome.not_needed
    assert models.resolved == 0
    assert path.read_bytes() == before
