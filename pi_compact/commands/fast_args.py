"""The `compact` command line without typer: keyword arguments for ``cli._compact`` when the line is
plain and well formed, else None so that typer parses it (and words its errors)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_FLAGS = {"--dry-run": "dry_run", "--json": "as_json", "--no-fallback": "no_fallback"}
_INT_OPTIONS = {
    "--keep-recent-tokens": "keep_recent_tokens", "--reserve-tokens": "reserve_tokens",
    "--context-window": "context_window",
}
_STR_OPTIONS = {
    "--token-estimator": "token_estimator", "--instructions": "instructions", "--model": "model",
    "--api-base": "api_base", "--api-key": "api_key", "--compaction-model": "compaction_model",
}


def _plain_int(text: str) -> bool:
    # Only canonical decimals: signs, spaces, underscores and leading zeros are left to typer.
    return text.isascii() and text.isdigit() and len(text) <= 18 and (text == "0" or text[0] != "0")


def fast_compact_args(argv: list[str]) -> dict[str, Any] | None:
    """Keyword arguments for ``_compact`` when ``argv`` is a plain ``compact`` call, else None."""
    if not argv or argv[0] != "compact" or any(name.endswith("_COMPLETE") for name in os.environ):
        return None
    values: dict[str, Any] = {}
    session: str | None = None
    index = 1
    while index < len(argv):
        token = argv[index]
        index += 1
        name, equals, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _FLAGS and not equals:
            values[_FLAGS[name]] = True
            continue
        if name in _INT_OPTIONS or name in _STR_OPTIONS:
            if equals:
                value = inline
            elif index < len(argv):
                value = argv[index]
                index += 1
            else:
                return None
            if not value or value.startswith("-"):
                return None
            if name in _INT_OPTIONS:
                if not _plain_int(value):
                    return None
                values[_INT_OPTIONS[name]] = int(value)
            else:
                values[_STR_OPTIONS[name]] = value
            continue
        if not token or token.startswith("-") or session is not None:
            return None
        session = token
    if session is None:
        return None
    values["session"] = Path(session)
    return values
