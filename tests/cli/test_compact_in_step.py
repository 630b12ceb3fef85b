"""``pi-compact compact`` and ``uncompact`` in step with the terminal (issue 35.7): the dry run after a
compaction shows the compacted size, "nothing to compact" says so (with the flag that compacts anyway)
in the dry run and the real run alike, and ``uncompact`` finds the embedded model's window as ``compact`` does."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from builders import (
    assistant,
    chain,
    coding_session,
    run_compaction,
    sized,
    structured_summary,
    usage,
    user,
    write_session,
)
from scripted_server import Reply, ScriptedServer

from pi_compact.cli.compact import compact_command
from pi_compact.cli.uncompact import uncompact_file


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh agent dir, no provider key (as a newcomer's), working in ``tmp_path``."""
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _out(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().out.split())


def _context_tokens(out: str) -> int:
    found = re.search(r"Context ([\d,]+) / ", out)
    assert found is not None, out
    return int(found.group(1).replace(",", ""))


def test_the_dry_run_after_a_compaction_shows_the_compacted_size(
    scripted_server: ScriptedServer, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / "s.jsonl"
    write_session(path, coding_session())
    assert compact_command(path, dry_run=True, context_window=128000, keep_recent_tokens=400) == 0
    assert _context_tokens(_out(capsys)) == 5100  # the last reply's usage
    scripted_server.enqueue(Reply(text=structured_summary("done")))
    assert run_compaction(path, scripted_server.base_url) is not None
    assert compact_command(path, dry_run=True, context_window=128000, keep_recent_tokens=400) == 0
    out = _out(capsys)
    # The summary and the kept turn, not the 5,100 tokens the compacted context measured.
    assert _context_tokens(out) < 1000
    assert "Plan Already compacted: the session ends with a compaction." in out


def test_compact_with_nothing_to_compact_names_the_flag_that_compacts_anyway(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / "small.jsonl"
    before = write_session(path, coding_session()[:4])
    assert compact_command(path, context_window=8000, model="openai/scripted", api_base="http://127.0.0.1:9",
                           api_key="k") == 0
    assert _out(capsys) == (
        "Nothing to compact: the whole conversation (~343 tokens) fits in the recent messages kept word for word "
        "(keepRecentTokens 3,000). To compact now, keep less: --keep-recent-tokens 100. The file was not changed."
    )
    assert path.read_bytes() == before


def test_the_dry_run_with_nothing_to_summarize_says_so_instead_of_summarizing_0_entries(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / "one.jsonl"
    write_session(path, chain(user("Please read this. " + sized(3200)), assistant("Read it.", usage=usage(3300, 10))))
    assert compact_command(path, dry_run=True, context_window=4000, reserve_tokens=1000,
                           keep_recent_tokens=2500) == 0
    out = _out(capsys)
    assert "Auto-compaction yes (threshold 3,000 tokens), but it would find nothing to summarize" in out
    # One message larger than the keep, and nothing after it to cut at: a smaller keep would not help either.
    assert "Plan Nothing to compact: the conversation" in out
    assert "holds more than keepRecentTokens (2,500)" in out and "keep less" not in out
    assert "Summarized" not in out and "Cut at" not in out


def test_uncompact_without_a_model_checks_against_the_embedded_models_window_as_compact_does(
    scripted_server: ScriptedServer, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / "s.jsonl"
    write_session(path, coding_session())
    scripted_server.enqueue(Reply(text=structured_summary("done")))
    assert run_compaction(path, scripted_server.base_url) is not None
    assert compact_command(path, dry_run=True) == 0  # compact needs no --model here
    assert "/ 16,384 tokens" in _out(capsys)
    assert uncompact_file(path) == 0  # and neither does uncompact
    out = _out(capsys)
    assert "Context uncompacted" in out and "16,384-token window" in out
