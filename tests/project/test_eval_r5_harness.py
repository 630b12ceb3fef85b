"""Issue 41's additions to the eval harness, on the scripted server: the code-only floor, the four fact
scores, the probes asked with automatic recall off and on, and the kept raw outputs that recompute every
table without a model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

EVAL = Path(__file__).resolve().parents[2] / "benchmarks" / "eval"
sys.path.insert(0, str(EVAL))

import recompute  # noqa: E402
import run_eval  # noqa: E402
from proxy import FLOOR_SUMMARY, floor_reply  # noqa: E402
from report5 import all_tables  # noqa: E402
from scoring import kept, load_rules, model_only  # noqa: E402

UPDATE = "r5-sql-update-es-t"  # the smallest round-5 session; it holds a previous compaction


def _run(tmp_path: Path, *extra: str) -> dict[str, Any]:
    result: dict[str, Any] = run_eval.main(["--target", "scripted", "--transcripts", UPDATE, "--agents",
                                            "ours,ours-floor", "--results", str(tmp_path / "out"), *extra])
    return result


def test_model_only_removes_each_tagged_block_on_its_own_lines_and_nothing_else() -> None:
    summary = ("## Goal\n- keep <read-files> as written\n\n<user-messages>\n- set X to 5\n</user-messages>\n\n"
               "<modified-files>\na.py\n</modified-files>")
    assert model_only(summary).strip() == "## Goal\n- keep <read-files> as written"


def test_the_floor_reply_is_the_empty_sections_streamed_or_whole() -> None:
    kind, body = floor_reply({"model": "m", "stream": True})
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")]
    assert kind == "text/event-stream" and body.decode().endswith("data: [DONE]\n\n")
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]) == FLOOR_SUMMARY
    kind, body = floor_reply({"model": "m"})
    assert kind == "application/json" and json.loads(body)["choices"][0]["message"]["content"] == FLOOR_SUMMARY
    assert kept(load_rules(UPDATE), FLOOR_SUMMARY) == []


def test_the_floor_compacts_with_a_summarizer_that_writes_nothing_and_probes_twice(tmp_path: Path) -> None:
    run = _run(tmp_path, "--recall", "both", "--floor-probes", "ours-floor")
    (result,) = run["results"]
    floor, ours = result["agents"]["ours-floor"], result["agents"]["ours"]
    assert (Path(run["dir"]) / UPDATE / "ours-floor" / "model_answer.md").read_text() == FLOOR_SUMMARY
    assert floor["facts_answer_ids"] == [] and floor["summarizer_requests"] >= 1
    # What the floor's summary still holds is what code put there (the previous summary's carried items).
    assert set(floor["facts_whole_ids"]) >= {"constraint_prev", "decision_prev"}
    assert set(ours["facts_answer_ids"]) > set(floor["facts_answer_ids"])
    for agent in (floor, ours):
        assert [p["id"] for p in agent["probes"]] == [p["id"] for p in agent["probes_recall_off"]]
    # The scripted reader answers right exactly when the probe's facts are in its request: automatic recall
    # brings some back for the floor, so recall on answers more than recall off.
    right = {key: sum(p["right"] for p in floor[key]) for key in ("probes", "probes_recall_off")}
    assert right["probes"] > right["probes_recall_off"]
    tables = all_tables(run["results"])
    assert "| ours recall off | ours recall on | ours-floor recall off | ours-floor recall on |" in tables


def test_a_saved_run_keeps_its_commit_and_recomputes_to_its_own_tables(tmp_path: Path, capsys: Any) -> None:
    saved = tmp_path / "kept"
    _run(tmp_path, "--save", str(saved))
    meta = json.loads((saved / "meta.json").read_text())
    assert len(meta["tree"]["commit"]) == 40 and meta["argv"][:2] == ["--target", "scripted"]
    assert {p.name for p in (saved / UPDATE / "ours").iterdir()} >= {"summary.md", "model_answer.md", "probes"}
    assert {p.name for p in (saved / UPDATE / "ours-floor").iterdir()} == {"summary.md", "model_answer.md",
                                                                           "compaction.json"}  # no probes asked
    assert not list(saved.rglob("*.jsonl"))  # sessions and request bodies stay in the scratch directory
    capsys.readouterr()
    recompute.main([str(saved)])
    printed = capsys.readouterr().out
    assert "Every score is the run's own." in printed
    assert printed.split("\nEvery score")[0].strip() == (saved / "table.md").read_text().strip()


def test_a_saved_run_names_a_changed_file_in_full_when_its_status_starts_with_a_space(tmp_path: Path) -> None:
    import subprocess

    import keep

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "bench.py").write_text("a\n", encoding="utf-8")
    git("add", "bench.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (tmp_path / "bench.py").write_text("b\n", encoding="utf-8")  # porcelain: " M bench.py"
    assert keep.tree(tmp_path)["changed_files"] == ["bench.py"]


def test_trained_and_held_out_are_summed_over_sessions_run_in_both_wordings_with_model_only() -> None:
    from report5 import split_table

    def result(name: str, split: str, kept: list[str]) -> dict[str, Any]:
        return {"transcript": name, "info": {"split": split}, "facts": [{"id": "a"}, {"id": "b"}],
                "agents": {"ours": {"facts_whole_ids": kept, "facts_model_only_ids": kept[:1],
                                    "facts_answer_ids": []}}}

    results = [result("r5-x-t", "trained", ["a", "b"]), result("r5-x-h", "held-out", ["a"]),
               result("r5-y-t", "trained", ["a", "b"])]  # its held-out twin was not run
    table = split_table(results, ["ours"])
    assert "| ours facts whole | 2 / 2 | 1 / 2 | 0.50 |" in table
    assert "| ours facts model only | 1 / 2 | 1 / 2 | 1.00 |" in table


def test_recompute_takes_only_the_named_agents_of_a_kept_run() -> None:
    run = EVAL / "results" / "baseline-1d92cea"
    path, only = recompute._run_and_agents(f"{run}:pi,pi-floor")
    results, differences = recompute.rescore(path, only)
    assert (path, differences) == (run, [])
    assert {t for r in results for t in r["agents"]} == {"pi", "pi-floor"} and len(results) == 5
