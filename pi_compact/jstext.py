"""Strings and JSON as JavaScript sees them, so our numbers and texts match pi's exactly (pure).

pi measures text in UTF-16 code units, prints tool-call arguments with ``JSON.stringify`` and writes
session lines with it too. Python differs in small ways (string length, float formatting, the order
of integer-like keys, lone surrogates); these helpers close the gaps.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

# In a Python str every surrogate code point is unpaired: a valid pair decodes to one character.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# json.dumps(value, ensure_ascii=False, separators=(",", ":")) without building an encoder per call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


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
    if text.isascii():  # the usual case, and far cheaper than the regex pass
        return text
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD: what UTF-8 (a request, a terminal) can carry.

    JSON may spell a lone surrogate (``"\\ud800"``), and a model or a session file written by pi can;
    Python then holds a str that every encoder refuses.
    """
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def may_hold_surrogates(json_text: str) -> bool:
    """Whether JSON text could decode to a lone surrogate (it spells one as a ``\\udXXX`` escape)."""
    return "\\ud" in json_text or "\\uD" in json_text


def repair_json(value: Any) -> Any:
    """``value`` (parsed JSON) with ``valid_text`` applied to every string, keys included.

    Lists and dicts are repaired in place (and returned), so a message already handed on is fixed too;
    iterative, so a value nested as deep as the JSON parser allows cannot exhaust the stack here.
    """
    if isinstance(value, str):
        return valid_text(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = valid_text(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
        elif isinstance(node, dict):
            for key in list(node):
                item = node[key]
                if isinstance(key, str) and valid_text(key) != key:
                    del node[key]
                    key = valid_text(key)
                if isinstance(item, str):
                    node[key] = valid_text(item)
                else:
                    node[key] = item
                    if isinstance(item, (list, dict)):
                        stack.append(item)
    return value


def _strings(value: Any) -> Iterator[str]:
    """Every string in parsed JSON, keys included (iterative: any depth)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, Mapping):
            for key, item in node.items():
                yield str(key)
                stack.append(item)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests lists or objects more than ``limit`` levels deep (iterative)."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (Mapping, list, tuple)):
            if depth >= limit:
                return True
            children = node.values() if isinstance(node, Mapping) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list, tuple)))
    return False


def valid_json(value: Any) -> Any:
    """``value`` itself when it holds no lone surrogate, else a repaired copy (the original is kept as
    it is, e.g. a session entry pi wrote, which is rewritten byte for byte)."""
    if not any(not text.isascii() and _LONE_SURROGATE.search(text) for text in _strings(value)):
        return value
    try:
        return repair_json(json.loads(json.dumps(value)))
    except RecursionError:  # nested deeper than a copy can go: repair the value itself
        return repair_json(value)


def dumps_json(value: Any) -> str:
    """Compact JSON with non-ASCII kept and lone surrogates escaped: safe to write as UTF-8."""
    return escape_lone_surrogates(_COMPACT.encode(value))


def json_string_body(text: str) -> str:
    """``text`` as the inside of a JSON string literal, as ``dumps_json`` writes it (quotes left out).

    JSON escapes character by character, so the bodies of consecutive pieces concatenate to the body
    of the whole text: a long string can be written out piece by piece.
    """
    return escape_lone_surrogates(encode_basestring(text))[1:-1]


# Control characters that JSON writes as \uXXXX, \b or \f: rare in text, left to json_string_body.
_RARE_CONTROLS = bytes(c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D))


def json_string_body_utf8(text: str) -> bytes:
    """``json_string_body(text)`` encoded as UTF-8, made about twice as fast for long texts.

    Escaping is done on the UTF-8 bytes with a few whole-buffer replacements (backslash first),
    which is exact as long as no character needs a ``\\u`` escape; texts with such characters
    (other control characters, lone surrogates, which UTF-8 cannot encode) take the exact path.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return json_string_body(text).encode("utf-8")
    if len(data.translate(None, _RARE_CONTROLS)) != len(data):
        return json_string_body(text).encode("utf-8")
    data = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    if b"\t" in data:
        data = data.replace(b"\t", b"\\t")
    if b"\r" in data:
        data = data.replace(b"\r", b"\\r")
    return data


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """Keys in JavaScript's own-property order: array-index-like keys ascending, then the rest."""
    keys = list(obj)
    # isascii(): str.isdigit() also accepts digits such as "\u00b2" that JavaScript treats as plain keys.
    # The first-character test comes first only because it is the cheapest and rules out most keys.
    numeric = [
        k for k in keys
        if "0" <= k[:1] <= "9" and k.isascii() and k.isdigit() and (k == "0" or k[0] != "0")
        and int(k) < 2**32 - 1
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


def _plain(value: Any) -> bool:
    """Does json.dumps write ``value`` exactly as JSON.stringify does? True for parsed JSON without
    floats and without keys that start with a digit (the only ones JavaScript may reorder)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is dict:
        return all(type(k) is str and not k[:1].isdigit() and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(item) for item in value)
    return False


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII kept, JavaScript key order and number format."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, str):
        return escape_lone_surrogates(encode_basestring(value))
    if (type(value) is dict or type(value) is list) and _plain(value):
        # One C-encoder call instead of one per key and value: tool-call arguments are like this.
        return escape_lone_surrogates(_COMPACT.encode(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{js_json(str(k))}:{js_json(value[k])}" for k in js_key_order(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    return "null"
