"""Resuming a compacted session keeps its token calibration (issue 44, item 7): ``-c`` opened with "not
calibrated" where the run before had shown "calibrated from 4 replies", because what the replies before
the compaction measured was carried over it in memory only. Now it is read back from the file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SETTINGS, make_model_harness, padded, scripted_summary

from pi_compact.llm.scripted import ScriptedReply
from pi_compact.session.store import SessionStore

AUTO = replace(SETTINGS, compaction=replace(SETTINGS.compaction, token_estimator="auto"))
QUESTION = 400


def test_a_resumed_session_is_calibrated_as_the_run_that_compacted_it_was(tmp_path: Path) -> None:
    prompts = [1_000]
    for _ in range(4):
        prompts.append(prompts[-1] + 5 + 2 * QUESTION)  # the provider counts twice what we estimate
    answers = [ScriptedReply(text=f"answer {n}", prompt_tokens=p) for n, p in enumerate(prompts)]
    h = make_model_harness(tmp_path, *answers, scripted_summary(), settings=AUTO)
    for n in range(len(answers)):
        h.session.prompt(padded(f"QUESTION-{n}", QUESTION))
    assert h.session.compact() is not None
    before = h.session.context_usage().calibration
    assert before.applied and before.replies >= 2 and before.factor > 1.5
    path = h.session.store.path
    assert path is not None
    h.session.close()

    again = make_model_harness(tmp_path / "again", settings=AUTO,
                               store=SessionStore.open(path, str(tmp_path), 1_700_000_000_000))
    after = again.session.context_usage().calibration
    assert after.describe() == before.describe()
