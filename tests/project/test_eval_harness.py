"""The compaction-quality eval harness (``benchmarks/eval``) on its short transcript, scripted server.

The scripted target's summarizer states exactly the first 7 planted facts and its chat model answers a
probe right exactly when the probe's facts are in the request, so the expected scores are known in
advance. pi's side runs only where node and pi 0.73.1 are found.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EVAL = Path(__file__).resolve().parents[2] / "benchmarks" / "eval"
sys.path.insert(0, str(EVAL))

import run_eval  # noqa: E402
import transcripts  # noqa: E402
from agents import pi_cli  # noqa: E402
from scoring import available, facts_kept, load_rules, probe_right, without_file_lists  # noqa: E402
from targets import SCRIPTED_KEPT, canned_summary  # noqa: E402

SHORT = "short-python"


def _expected_right(name: str) -> int:
    rules = load_rules(name)
    kept = {f["id"] for f in rules.facts[:SCRIPTED_KEPT]}
    return sum(set(p["facts"]) <= kept for p in rules.probes)


def test_data_files_are_what_the_seeded_generator_writes() -> None:
    for name, flavour, seed, turns, functions in transcripts.SPECS:
        text, info = transcripts.generate(name, flavour, seed, turns, functions)
        assert (EVAL / "data" / f"{name}.jsonl").read_text(encoding="utf-8") == text
        written = (EVAL / "data" / f"{name}.facts.json").read_text(encoding="utf-8")
        assert written == json.dumps(info, indent=1) + "\n"


def test_transcripts_vary_and_have_ten_facts_and_five_probes() -> None:
    names = available()
    assert {"python-ratekeeper", "go-leasekeeper", "ts-billing", SHORT} <= set(names)
    values: dict[str, set[str]] = {}
    for name in names:
        rules = load_rules(name)
        assert len(rules.facts) == 10 and len(rules.probes) == 5
        for fact in rules.facts:
            values.setdefault(fact["id"], set()).add(fact["statement"])
        info = json.loads((EVAL / "data" / f"{name}.facts.json").read_text(encoding="utf-8"))
        if name != SHORT:
            assert 10_000 <= info["tokens_chars4"] <= 12_000
    # Not one set of values: the ticket, the setting and the error differ in every transcript.
    assert len(values["ticket"]) == len(values["setting"]) == len(values["error"]) == len(names)


def test_the_product_plans_the_cut_the_data_expects(tmp_path: Path) -> None:
    """pi-compact's dry run (chars/4, keep 1,500) cuts at the recorded entry, not in a split turn, and every
    fact is planted in an entry it summarizes, where its rule matches the serialized history."""
    for name in available():
        rules = load_rules(name)
        done = subprocess.run(
            [sys.executable, "-m", "pi_compact", "compact", str(rules.transcript), "--dry-run", "--json",
             "--keep-recent-tokens", "1500", "--reserve-tokens", "4096", "--context-window", "16384",
             "--token-estimator", "chars4"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(EVAL.parent.parent)})
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)["plan"]
        assert plan["first_kept_entry_id"] == rules.cut_entry_id and not plan["is_split_turn"], name
        for fact in rules.facts:
            assert fact["entry_id"] in plan["summarize_entry_ids"], (name, fact["id"])
            assert re.search(fact["regex"], plan["serialized_history"], re.IGNORECASE), (name, fact["id"])


def test_scoring_counts_the_facts_a_summary_states() -> None:
    for name in available():
        rules = load_rules(name)
        assert len(facts_kept(rules, canned_summary(rules))) == SCRIPTED_KEPT
        assert facts_kept(rules, canned_summary(rules, kept=10)) == [f["id"] for f in rules.facts]
        assert facts_kept(rules, canned_summary(rules, kept=0)) == []
        for probe in rules.probes:
            assert probe_right(probe, probe["answer"]) and not probe_right(probe, "I do not know.")
    # The file lists both agents append by code do not count as kept facts.
    rules = load_rules(SHORT)
    path = next(f for f in rules.facts if f["id"] == "path_a")["statement"]
    listed = f"## Goal\nx\n\n<modified-files>\n{path}\n</modified-files>"
    assert without_file_lists(listed).strip() == "## Goal\nx" and "path_a" not in facts_kept(rules, listed)


def _run(tmp_path: Path, agents: str, pi: Path | None = None) -> dict[str, Any]:
    argv = ["--target", "scripted", "--transcripts", SHORT, "--agents", agents, "--results", str(tmp_path / "out")]
    result: dict[str, Any] = run_eval.main(argv + (["--pi-cli", str(pi)] if pi else []))
    return result


def test_harness_on_the_short_transcript_scores_and_keeps_raw_outputs(tmp_path: Path) -> None:
    run = _run(tmp_path, "ours")
    (result,) = run["results"]
    ours = result["agents"]["ours"]
    assert ours["exit"] == 0 and not ours["fallback"]
    # The canned summary states 7 facts; the ticket id the user typed and the helper an edit added are put
    # back without a model (``idsAdded``, ``namesAdded``).
    assert ours["facts_kept"] == SCRIPTED_KEPT + 2 and ours["facts_total"] == 10
    assert ours["first_kept_entry_id"] == load_rules(SHORT).cut_entry_id and result["same_cut"]
    assert ours["summarizer_requests"] == 1 and ours["summarizer_prompt_tokens"] > 0
    # The canned summary holds the facts of 3 probes; the other two (the new helper's name and the ticket
    # id, which it lost) are answered from what compaction put back and what automatic recall attaches.
    right = {p["id"] for p in ours["probes"] if p["right"]}
    assert _expected_right(SHORT) == 3 and right == {"p_error", "p_setting", "p_paths", "p_function", "p_ticket"}
    assert ours["probes_total"] == 5
    out = Path(run["dir"])
    raw = out / SHORT / "ours"
    assert "## Constraints & Preferences" in (raw / "summary.md").read_text()
    requests = [json.loads(line) for line in (raw / "requests.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in requests].count("summarizer") == 1 and len(requests) >= 6
    assert all(r["request"]["temperature"] == 0 for r in requests)
    assert len(list((raw / "probes").glob("*.txt"))) == 5
    table = (out / "table.md").read_text()
    assert f"| {SHORT} | {SCRIPTED_KEPT + 2} / 10 |" in table
    assert json.loads((out / "results.json").read_text())["results"][0]["agents"]["ours"]["facts_kept"] == 9


def test_harness_runs_pi_side_by_side(tmp_path: Path) -> None:
    pi = pi_cli()
    if pi is None or shutil.which("node") is None:
        pytest.skip("node or pi 0.73.1 is not installed (node_modules/@mariozechner/pi-coding-agent, or $PI_CLI)")
    run = _run(tmp_path, "ours,pi", pi)
    (result,) = run["results"]
    assert result["same_cut"], "both agents must cut at the same entry"
    for agent in ("ours", "pi"):
        data = result["agents"][agent]
        assert data["facts_kept"] == SCRIPTED_KEPT and data["summarizer_requests"] == 1
        # pi has no automatic recall: only the summary's facts answer (ours: two more, see above).
        assert data["probes_right"] == _expected_right(SHORT) + 2 * (agent == "ours")
