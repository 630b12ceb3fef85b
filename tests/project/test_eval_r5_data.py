"""The round-5 eval transcripts (``benchmarks/eval/phrased.py``, issue 41): their data and rules.

Each session is written twice, once in the trained half of the wordings and once in the held-out half;
these tests check that the two twins are the same session in other words, that every kind a person words
has at least four wordings split into the two halves, and that the rules, the cut and the previous
compactions are what the harness expects.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

EVAL = Path(__file__).resolve().parents[2] / "benchmarks" / "eval"
sys.path.insert(0, str(EVAL))

import phrased  # noqa: E402
import phrasings  # noqa: E402
from eval_dry_run import dry_run_plan  # noqa: E402
from scoring import DATA, available, load_rules  # noqa: E402

R5 = DATA / "r5"


def _entries(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in load_rules(name).transcript.read_text(encoding="utf-8").splitlines()[1:]]


def test_the_round5_files_are_what_the_seeded_generator_writes() -> None:
    assert available(R5) == sorted(phrased.NAMES)
    for session in phrased.SESSIONS:
        for split in phrasings.SPLITS:
            text, info = phrased.generate(session, split)
            name = info["transcript"].removesuffix(".jsonl")
            assert (R5 / f"{name}.jsonl").read_text(encoding="utf-8") == text
            assert (R5 / f"{name}.facts.json").read_text(encoding="utf-8") == json.dumps(
                info, indent=1, ensure_ascii=False) + "\n"


def test_every_worded_kind_has_at_least_four_wordings_split_in_two_halves() -> None:
    for kind, languages in phrasings.kinds().items():
        for language, (trained, held_out) in languages.items():
            assert trained >= 2 and held_out >= 2, (kind, language)
    for _regex, languages in phrasings.RULES:
        for trained, held_out in languages.values():
            assert len(trained) >= 2 and len(held_out) >= 2 and not set(trained) & set(held_out)
    assert not set(phrasings.ERROR_SHAPES["trained"]) & set(phrasings.ERROR_SHAPES["held-out"])


def test_twins_are_one_session_in_other_words() -> None:
    """Same entries (ids, roles, tool calls), same facts and probes; only the user's and assistant's words
    differ, and they do."""
    for session in phrased.SESSIONS:
        trained, held_out = (load_rules(f"r5-{session}-{s}") for s in "th")
        assert trained.info and held_out.info
        assert (trained.info["split"], held_out.info["split"]) == ("trained", "held-out")
        assert trained.cut_entry_id == held_out.cut_entry_id
        assert [f["id"] for f in trained.facts] == [f["id"] for f in held_out.facts]
        assert [p["question"] for p in trained.probes] == [p["question"] for p in held_out.probes]
        a, b = _entries(trained.name), _entries(held_out.name)
        assert [e["id"] for e in a] == [e["id"] for e in b]
        worded = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        assert worded, session


def test_every_rule_matches_its_statement_and_the_fact_is_planted_before_the_cut() -> None:
    for name in phrased.NAMES:
        rules = load_rules(name)
        ids = [e["id"] for e in _entries(name)]
        for fact in rules.facts:
            assert re.search(fact["regex"], fact["statement"], re.IGNORECASE), (name, fact["id"])
            assert ids.index(fact["entry_id"]) < ids.index(rules.cut_entry_id), (name, fact["id"])
        for probe in rules.probes:
            assert re.search(probe["regex"], probe["answer"], re.IGNORECASE), (name, probe["id"])
            assert not re.search(probe["regex"], "I do not know.", re.IGNORECASE)


def test_the_sessions_cover_what_round_4_lacked() -> None:
    facts = [(load_rules(name).info or {}, f) for name in phrased.NAMES for f in load_rules(name).facts]
    sources = {f["source"] for _, f in facts}
    assert sources == {"user", "assistant", "tool", "previous summary"}
    kinds = {f["kind"] for _, f in facts}
    assert {"user correction", "root cause", "rename", "value only in tool output"} <= kinds
    assert {info["user_language"] for info, _ in facts} == {"en", "de", "es"}
    new = {f["kind"] for _, f in facts if f["since_previous"]}
    assert {"decision with reason", "new function name", "user correction", "agreed next step",
            "exact error message"} <= new


def test_an_update_session_holds_one_compaction_whose_summary_alone_has_the_remembered_facts() -> None:
    for name in ("r5-rust-update-t", "r5-sql-update-es-h"):
        entries = _entries(name)
        compactions = [e for e in entries if e["type"] == "compaction"]
        assert len(compactions) == 1
        at = entries.index(compactions[0])
        kept = [e["id"] for e in entries].index(compactions[0]["firstKeptEntryId"])
        assert kept < at  # it kept a short exchange before itself, as a real compaction does
        after = json.dumps(entries[at + 1:], ensure_ascii=False)
        for fact in load_rules(name).facts:
            if fact["source"] == "previous summary":
                assert re.search(fact["regex"], compactions[0]["summary"], re.IGNORECASE), fact["id"]
                assert not re.search(fact["regex"], after, re.IGNORECASE), fact["id"]


def test_the_product_plans_the_cut_the_data_expects(tmp_path: Path) -> None:
    for name in phrased.NAMES:
        rules = load_rules(name)
        plan = dry_run_plan(rules.transcript, tmp_path)
        assert plan["first_kept_entry_id"] == rules.cut_entry_id and not plan["is_split_turn"], name
        for fact in rules.facts:
            if fact["source"] != "previous summary":
                assert fact["entry_id"] in plan["summarize_entry_ids"], (name, fact["id"])
