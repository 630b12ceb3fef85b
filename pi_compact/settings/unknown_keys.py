"""Warnings for settings keys that neither this port nor pi knows, with a did-you-mean suggestion.

Contract:
- ``unknown_key_warnings(raw, path)`` looks at the top level of one settings file and inside the
  sections this port reads (``compaction``, ``retry``, ``retry.provider``) and returns one sentence
  per unknown key, naming the file, the dotted key and, when one is close, the key that was probably
  meant (difflib against the known keys of the same level).
- Keys pi itself reads (``theme``, ``packages`` ...) are known too: a settings file shared with pi
  must not raise false alarms, and neither do comment keys (``"//..."``). Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_compact.settings.schema import KEYS

# Keys pi 0.73's settings file may carry that this port does not use (pi's Settings interface),
# plus the legacy names ``check_settings`` migrates.
_PI_ONLY: frozenset[str] = frozenset(
    {
        "lastChangelogVersion", "defaultThinkingLevel", "transport", "steeringMode", "followUpMode", "theme",
        "branchSummary", "hideThinkingBlock", "shellPath", "quietStartup", "shellCommandPrefix", "npmCommand",
        "collapseChangelog", "enableInstallTelemetry", "packages", "extensions", "skills", "prompts", "themes",
        "enableSkillCommands", "terminal", "images", "enabledModels", "doubleEscapeAction", "treeFilterMode",
        "thinkingBudgets", "editorPaddingX", "autocompleteMaxVisible", "showHardwareCursor", "markdown",
        "warnings", "models", "retry.maxDelayMs", "retry.provider.maxRetries",
    }
)

_SECTIONS: tuple[str, ...] = ("", "compaction", "retry", "retry.provider")


def known_keys() -> frozenset[str]:
    """Every dotted key (and every section) a settings file may hold without a warning."""
    dotted = {key.dotted for key in KEYS} | _PI_ONLY
    sections = {".".join(key.path[:depth]) for key in KEYS for depth in range(1, len(key.path))}
    return frozenset(dotted | sections)


def _level(known: frozenset[str], section: str) -> list[str]:
    """The known names directly inside ``section`` ("" is the top level)."""
    prefix = f"{section}." if section else ""
    return sorted({name[len(prefix):] for name in known if name.startswith(prefix) and "." not in name[len(prefix):]})


def unknown_key_warnings(raw: Mapping[str, Any], path: Path) -> list[str]:
    """One warning per unknown key of one file's top level and of the sections this port reads."""
    known = known_keys()
    warnings: list[str] = []
    for section in _SECTIONS:
        node: Any = raw
        for part in section.split(".") if section else ():
            node = node.get(part) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            continue
        names = _level(known, section)
        prefix = f"{section}." if section else ""
        for name in node:
            # "//..." keys are comments (settings.example.json documents itself with them).
            if str(name) in names or str(name).startswith("//"):
                continue
            guess = difflib.get_close_matches(str(name), names, n=1, cutoff=0.75)
            hint = f" (did you mean {prefix}{guess[0]}?)" if guess else ""
            warnings.append(f"Unknown setting {prefix}{name} in {path} is ignored{hint}.")
    return warnings
