"""The names of functions, classes and settings an edit or write adds, read from its new text (pure).

"Which function did we add?" cannot be answered from "added a retry helper". The new text of an edit
or write is read for definitions (``def``/``class`` in Python, ``function``/``class``/``interface``/
``type``/``enum`` and top-level ``const``/``let`` in JavaScript and TypeScript, ``func`` in Go,
``fn``/``struct``/``enum``/``trait`` in Rust, UPPER_CASE settings such as ``MAX_RETRIES = 3``, and the
keys an edit of a config file (YAML, TOML, INI, JSON, ``.env``) adds); a name the old text already held is
no addition. This reads code, not sentences: "function provider for ..." in prose defines nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_EXPORT = r"(?:export[ \t]+)?(?:default[ \t]+)?(?:pub(?:\([\w:]+\))?[ \t]+)?(?:async[ \t]+)?"
_DEFINITION = re.compile(
    r"^[ \t]*" + _EXPORT + r"(?:def|class|function\*?|interface|enum|trait|struct|fn)[ \t]+([A-Za-z_$][\w$]*)"
    # followed by what follows a name in code ("function provider for ..." in prose is no definition)
    r"(?=[ \t]*(?:[(:{<;]|extends\b|implements\b|$))"
    r"|^[ \t]*func[ \t]+(?:\([^)]*\)[ \t]*)?([A-Za-z_]\w*)[ \t]*[\[(]"
    r"|^[ \t]*type[ \t]+([A-Za-z_]\w*)[ \t]+(?:struct|interface)\b"
    r"|^" + _EXPORT + r"(?:type[ \t]+([A-Za-z_$][\w$]*)[ \t]*(?:<[^=]*>)?[ \t]*="
    r"|(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)[ \t]*[:=])"
    r"|^[ \t]*(?:(?:(?:export|const|static|final|pub|public|private|readonly|let)[ \t]+)+(?:[\w<>\[\]]+[ \t]+)?)?"
    r"([A-Z][A-Z0-9]*_[A-Z0-9_]+)"
    r"[ \t]*(?::[^=\n]*)?=(?!=)",
    re.MULTILINE,
)
_DUNDER = re.compile(r"^__\w+__$")
# In a config file every key is a setting: ``retry_limit: 5``, ``pool_size = 8``, ``"shardCount": 606``.
_CONFIG_FILE = re.compile(r"\.(?:ya?ml|toml|ini|cfg|conf|properties|env|json)$|(?:^|/)\.env(?:\.\w+)?$")
_CONFIG_KEY = re.compile(r"""^[ \t]*(?:export[ \t]+)?["']?([A-Za-z_][\w.-]*\w)["']?[ \t]*[:=](?!=)""", re.MULTILINE)


def defined_names(text: str, path: str = "") -> list[str]:
    """The names ``text`` (the new text of the file at ``path``) defines, in order, each once."""
    found: dict[str, None] = {}
    config = bool(_CONFIG_FILE.search(path))
    for match in (_CONFIG_KEY if config else _DEFINITION).finditer(text):
        name = next(g for g in match.groups() if g)
        if not _DUNDER.match(name):
            found.setdefault(name, None)
    return list(found)


def replacements(tool: str, arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(old text, new text) of each replacement an edit or write call asks for: pi's ``edits`` list, the
    single ``oldText``/``newText`` pair, or a write's whole ``content`` (old text: none)."""
    if tool == "write":
        return [("", str(arguments.get("content") or ""))]
    edits = arguments.get("edits")
    pairs = [(str(e.get("oldText") or ""), str(e.get("newText") or ""))
             for e in (edits if isinstance(edits, list) else []) if isinstance(e, Mapping)]
    if isinstance(arguments.get("oldText"), str) or isinstance(arguments.get("newText"), str):
        pairs.append((str(arguments.get("oldText") or ""), str(arguments.get("newText") or "")))
    return pairs


def added_names(tool: str, arguments: Mapping[str, Any]) -> list[str]:
    """The names a successful edit or write call added (a whole config file written holds every key
    anew, so only an edit's keys count there)."""
    path = str(arguments.get("path") or "") if tool == "edit" else ""
    found: dict[str, None] = {}
    for old, new in replacements(tool, arguments):
        found.update((name, None) for name in defined_names(new, path) if not _names(name, old))
    return list(found)


def _names(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text) is not None


__all__ = ["added_names", "defined_names", "replacements"]
