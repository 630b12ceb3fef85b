"""The README's list of deliberate differences from pi stays true to what the code writes and sends."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from builders import coding_session, run_compaction, structured_summary, write_session
from scripted_server import Reply, ScriptedServer, server_error_reply

from pi_compact.compaction import summarize

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "## Where pi-compact differs from pi, on purpose"
PI_DETAILS = {"readFiles", "modifiedFiles"}  # what pi 0.73.1 writes in a compaction's details


def differences_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    return text[start : end if end >= 0 else len(text)]


@pytest.mark.parametrize(
    "statement",
    [
        '`tokenEstimator: "auto"`',  # plans equal pi's only with chars4 (or text without CJK)
        '`"chars4"`',
        "fits in\n  `keepRecentTokens`",  # no call on an empty history
        "`[... middle of the turn omitted to fit ...]`",  # an over-long turn prefix
        "half the context window",  # summary max tokens
        "Unsigned thinking is not sent back",
    ],
)
def test_readme_states_each_deliberate_difference(statement: str) -> None:
    assert statement in differences_section()


def test_readme_quotes_the_turn_prefix_marker_the_summarizer_sends() -> None:
    marker = "[... middle of the turn omitted to fit ...]"
    assert marker in inspect.getsource(summarize) and f"`{marker}`" in differences_section()


@pytest.mark.parametrize("fails", [False, True], ids=["model", "fallback"])
def test_readme_names_every_details_field_beyond_pis(
    scripted_server: ScriptedServer, tmp_path: Path, fails: bool
) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    scripted_server.enqueue(server_error_reply(500, repeat=True) if fails else Reply(text=structured_summary()))
    assert run_compaction(path, scripted_server.base_url) is not None
    details = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])["details"]
    extra = set(details) - PI_DETAILS
    assert extra and all(f"`{key}`" in differences_section() for key in extra), extra
