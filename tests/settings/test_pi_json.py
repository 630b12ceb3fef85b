"""``models.json``'s dialect is pi 0.73.1's: its two regular expressions (written here with JavaScript's meaning
of ``.`` and ``\\s``) give the same text as the linear scanner on any input (issue 42, item 4)."""

from __future__ import annotations

import random
import re

import pytest

from pi_compact.settings.pi_json import loads_pi_json, strip_pi_json

# pi's expressions; JavaScript's ``.`` stops at four line ends, its ``\s`` is this class.
_JS_DOT = r"[^\n\r\u2028\u2029]"
_JS_SPACE = r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_COMMENTS = re.compile(rf'"(?:\\{_JS_DOT}|[^"\\])*"|//[^\n]*')
_COMMAS = re.compile(rf'"(?:\\{_JS_DOT}|[^"\\])*"|,({_JS_SPACE}*[}}\]])')
_ALPHABET = ['"', "\\", "/", ",", "}", "]", "{", "[", "*", "a", " ", "\t", "\n", "\r", "\u2028", "\u00a0", "\ufeff"]


def pi_strip(text: str) -> str:
    text = _COMMENTS.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _COMMAS.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)


def test_the_scanner_gives_what_pis_expressions_give_on_random_text() -> None:
    rng = random.Random(42)
    for _ in range(20000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 40)))
        assert strip_pi_json(text) == pi_strip(text), repr(text)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": "x//y", // note\n "b": 1,}', '{"a": "x//y", \n "b": 1}'),
    ('["a\\"b", 2 ,\n]', '["a\\"b", 2 \n]'),
    ('"open \\\n // cut\n', '"open \\\n \n'),  # a backslash before a line end: the string never closed
    ("[1,,]", "[1,]"),
])
def test_comments_and_trailing_commas_go_and_strings_stay(text: str, expected: str) -> None:
    assert strip_pi_json(text) == expected == pi_strip(text)


def test_nan_and_infinity_are_refused_as_json_parse_refuses_them() -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match="is not JSON"):
            loads_pi_json(f'{{"a": {constant}}}')
