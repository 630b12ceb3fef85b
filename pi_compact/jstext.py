"""Strings and JSON as JavaScript sees them, so our numbers and texts match pi's exactly (pure).

pi measures text in UTF-16 code units, prints tool-call arguments with ``JSON.stringify`` and writes
session lines with it too. Python differs in small ways (string length, float formatting, the order
of integer-like keys, lone surrogates); these helpers close the gaps.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

# In a Python str every surrogate code point is unpaired: a valid pair decodes to one character.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def js_len(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.length`` counts it."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (legal in a JS string, and in pi's files) is one code unit.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(text: str, limit: int) -> str:
    """The first ``limit`` UTF-16 code units of ``text`` (a split surrogate pair stays split, as in JS)."""
    if text.isascii():
        return text[:limit]
    return text.encode("utf-16-le", "surrogatepass")[: 2 * limit].decode("utf-16-le", "surrogatepass")


def escape_lone_surrogates(text: str) -> str:
    """Write lone surrogates as ``\\udXXX`` escapes (as JSON.stringify does), so UTF-8 can encode them."""
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def dumps_json(value: Any) -> str:
    """Compact JSON with non-ASCII kept and lone surrogates escaped: safe to write as UTF-8."""
    return escape_lone_surrogates(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """Keys in JavaScript's own-property order: array-index-like keys ascending, then the rest."""
    keys = list(obj)
    # isascii(): str.isdigit() also accepts digits such as "\u00b2" that JavaScript treats as plain keys.
    numeric = [
        k for k in keys
        if k.isascii() and k.isdigit() and (k == "0" or not k.startswith("0")) and int(k) < 2**32 - 1
    ]
    if not numeric:
        return keys
    index_keys = set(numeric)
    return sorted(numeric, key=int) + [k for k in keys if k not in index_keys]


def js_number(value: float) -> str:
    """``String(x)`` for a JavaScript number: shortest digits, JS's switch to exponent notation."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    decimal = Decimal(repr(abs(value))).normalize()
    _, digit_tuple, exponent = decimal.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    n = len(digits)
    k = exponent + n  # value = 0.digits x 10^k
    if n <= k <= 21:
        return sign + digits + "0" * (k - n)
    if 0 < k <= 21:
        return sign + digits[:k] + "." + digits[k:]
    if -6 < k <= 0:
        return sign + "0." + "0" * (-k) + digits
    e = k - 1
    mantissa = digits if n == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII kept, JavaScript key order and number format."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, str):
        return escape_lone_surrogates(json.dumps(value, ensure_ascii=False))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{js_json(str(k))}:{js_json(value[k])}" for k in js_key_order(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    return "null"
