"""``session.terms``: what a search looks for, and whole-token matching (issue 23)."""

from __future__ import annotations

from pi_compact.session.terms import Terms, has_term, parse_terms


def test_identifiers_paths_numbers_and_quoted_phrases_are_exact_terms() -> None:
    terms = parse_terms('what was the value of NEEDLE-3 in src/app.py, max_retries, 54317 and "blue slot"?')
    assert terms == Terms(("blue slot", "needle-3", "src/app.py", "max_retries", "54317"), ())


def test_common_words_are_left_out_unless_nothing_else_is_left() -> None:
    assert parse_terms("what did the user say about the staging port").plain == ("user", "say", "staging", "port")
    assert parse_terms("what was that").plain == ("what", "was", "that")


def test_exact_terms_match_as_whole_tokens_only() -> None:
    assert has_term("see needle-3.", "needle-3", exact=True)
    assert not has_term("see needle-30 and xneedle-3", "needle-3", exact=True)
    assert not has_term("src/app.py.bak", "src/app.py", exact=True)
    assert has_term("deployed", "deploy", exact=False)


def test_one_notion_of_code_in_two_strengths() -> None:
    """What a summary must keep (``is_identifier``, also the gate's: ``quality.exact_items``) is always
    matched whole by a search (``is_exact``); the search also takes joined prose and bare numbers whole."""
    from pi_compact.compaction.quality import exact_items
    from pi_compact.session.terms import is_exact, is_identifier

    code = ["max_retries", "refillTokensLocked", "NEEDLE-3", "PAY-1234", "v2", "os.path", "src/app.py", "_x"]
    prose = ["well-known", "e.g", "dry-rotate", "54317", "x-ray"]
    assert all(is_identifier(t) and is_exact(t) for t in code)
    assert [t for t in prose if is_identifier(t)] == [] and all(is_exact(t) for t in prose)
    assert not is_exact("3") and not is_exact("plain") and not is_identifier("plain")
    assert exact_items("call refillTokensLocked for NEEDLE-3, a well-known e.g case") == [
        "refillTokensLocked", "NEEDLE-3"]
