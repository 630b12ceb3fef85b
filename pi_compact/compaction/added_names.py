"""The names of functions, classes and settings the edits added, and putting back the ones a summary
left out (pure).

"Which function did we add?" is a question the next model cannot answer when the summary says only
"added a retry helper". The new text of each edit and write call that succeeded is read for
definitions (``def``/``class`` in Python, ``function``/``class``/``interface``/``type``/``enum`` and
top-level ``const``/``let`` in JavaScript and TypeScript, ``func`` in Go, ``fn``/``struct``/``enum``/
``trait`` in Rust, UPPER_CASE settings such as ``MAX_RETRIES = 3``, and the keys an edit of a config file
(YAML, TOML, INI, JSON, ``.env``) added); a name the edit's old text already held is no addition. Those the
summary does not name go under "Critical Context" as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pi_compact.compaction.listed import add_line, listed, newest_distinct
from pi_compact.compaction.succeeded import succeeded_calls
from pi_compact.messages import Message

NAMES_PREFIX = "- Names added by the edits: "
NAMES_ADDED = 10  # the newest distinct names, at most
_EDIT_TOOLS = frozenset({"edit", "write"})
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


def _new_text(name: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """(new text, old text) of an edit or write call's arguments."""
    if name == "write":
        return str(arguments.get("content") or ""), ""
    return str(arguments.get("newText") or ""), str(arguments.get("oldText") or "")


def added_names(messages: Iterable[Message], previous_summary: str | None = None,
                limit: int = NAMES_ADDED) -> list[str]:
    """The newest ``limit`` distinct names the successful edit and write calls added (in the order
    added); those an earlier summary listed as added come first, as older."""
    return newest_distinct(listed_names(previous_summary or ""), _added(messages), limit)


def _added(messages: Iterable[Message]) -> Iterator[str]:
    """Each name a successful edit or write call defined that its old text did not, oldest first."""
    for name, arguments in succeeded_calls(messages, _EDIT_TOOLS):
        new, old = _new_text(name, arguments)
        # A whole config file written holds every key anew (a package.json: "name", "version"...): only an
        # edit's keys are settings it added.
        path = str(arguments.get("path") or "") if name == "edit" else ""
        yield from (defined for defined in defined_names(new, path) if not _names(defined, old))


def _names(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text) is not None


def listed_names(summary: str) -> list[str]:
    """The names a summary's own "Names added by the edits" line lists (how they carry to the next one)."""
    return listed(summary, NAMES_PREFIX)


def add_missing_names(summary: str, names: Sequence[str]) -> tuple[str, list[str]]:
    """``summary`` with the ``names`` it does not mention on one line under Critical Context, and those."""
    missing = [n for n in names if not _names(n, summary)]
    if not missing:
        return summary, []
    return add_line(summary, NAMES_PREFIX, missing), missing


__all__ = ["add_missing_names", "added_names", "defined_names", "listed_names"]
