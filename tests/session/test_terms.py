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
