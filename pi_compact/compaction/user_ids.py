"""The ids the user typed, and putting back the ones a summary left out (pure).

A small summarizer drops the ticket a user named ("ABC-123"), the version to ship ("v2.3.1"), the host
or the environment, though the next model cannot guess any of them. Only the user's own typed words
count (role ``user``; not code fences, not ``>`` quoted lines, never assistant text or tool output),
and only forms that are unmistakably ids: ticket-like ``ABC-123``/``GH-77``/``#4521``, versions
``v2.3``/``1.14.0``, hostnames under a known suffix (``db-2.internal``, ``api.example.com``), IPv4
addresses, and environment names only when written as one (in backticks, ``env=staging``,
``--env prod-eu``). Each id the summary lacks is appended under "Critical Context" as typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pi_compact.compaction.listed import add_line, listed, newest_distinct
from pi_compact.messages import Message, text_of

IDS_PREFIX = "- Ids named by the user: "
IDS_ADDED = 10  # the newest distinct ids, at most

_ENV = r"(?:dev|development|test|testing|qa|uat|stage|staging|preprod|pre-prod|prod|production|sandbox|canary|live)" \
       r"(?:[-_][a-z0-9]+)*"
# In backticks ``dev``/``test`` are as often a script or a command: those only with a suffix (``dev-eu``).
_BACKTICKED_ENV = r"(?:(?:staging|prod|production|preprod|pre-prod|uat|qa|sandbox|canary)(?:[-_][a-z0-9]+)*" \
                  r"|(?:dev|development|test|testing|stage|live)(?:[-_][a-z0-9]+)+)"
_PATTERNS = (
    # Ticket-like: ``ABC-123``, ``GH-77``, ``CVE-2021-44228``.
    r"(?<![\w-])[A-Z][A-Z0-9]{1,9}(?:-\d+)+(?![\w-])",
    r"(?<![\w&#/])#\d{2,5}(?!\w)",  # longer is more often a colour (``#283228``) than an issue
    # Versions: ``v2.3``, ``v2.3.1-rc1``, ``1.14.0`` (not an IP address's first three parts).
    r"(?<![\w./-])(?:v\d+(?:\.\d+){1,2}|(?:0|[1-9]\d*)\.\d+\.\d+)(?:-(?:rc|alpha|beta|dev|pre)(?:\.?[0-9A-Za-z]+)*)?"
    r"(?![.\d]*\d)(?!\w|\.\w)",  # not a time (``01.27.21``) nor part of a file name (``1.2.3.png``)
    r"(?<![\w./-])\d{1,3}(?:\.\d{1,3}){3}(?![.\d]*\d)(?!\w)",
    # Hostnames under a suffix that is clearly one (not ``config.py`` nor ``README.md``).
    r"(?<![\w.@-])(?<![\w.]/)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
    r"(?:com|net|org|io|dev|internal|local|lan|corp|cloud|svc|example|intra)(?![\w-]|\.[a-z0-9])",
    # Environment names, only where they are written as an id.
    rf"`({_BACKTICKED_ENV})`",
    rf"(?i:\b(?:env|environment|stage|[A-Z_]*_ENV)\s*[=:]\s*['\"]?)({_ENV})\b",
    rf"--(?:env|environment|stage)[= ]({_ENV})\b",
)
_ID = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))
_NOT_IDS = frozenset({"UTF", "SHA", "ISO", "MD", "AES", "RSA", "HTTP", "HTTPS", "TLS", "SSL", "ES", "GPT", "IPV"})
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)


def typed_text(message: Message) -> str:
    """What the user typed in ``message`` (a ``user`` message), without code fences and quoted lines."""
    if message.get("role") != "user":
        return ""
    text = _FENCE.sub("\n", text_of(message.get("content")))
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))


def ids_in(text: str) -> list[str]:
    """The ids in ``text``, in order, each once."""
    found: dict[str, None] = {}
    for match in _ID.finditer(text):
        value = next((g for g in match.groups() if g), match.group(0))
        if value.split("-")[0] not in _NOT_IDS:
            found.setdefault(value, None)
    return list(found)


def user_ids(messages: Iterable[Message], previous_summary: str | None = None,
             limit: int = IDS_ADDED) -> list[str]:
    """The newest ``limit`` distinct ids the user typed (in the order typed); the ids an earlier summary
    listed as the user's come first, as older."""
    typed = (value for message in messages for value in ids_in(typed_text(message)))
    return newest_distinct(listed_ids(previous_summary or ""), typed, limit)


def listed_ids(summary: str) -> list[str]:
    """The ids a summary's own "Ids named by the user" line lists (how they carry to the next one)."""
    return listed(summary, IDS_PREFIX)


def _holds(summary: str, value: str) -> bool:
    """Does ``summary`` name ``value`` (case aside; ``#4521`` as 4521, ``v2.3.1`` as 2.3.1)?"""
    forms = [value] + ([value[1:]] if value[0] in "#vV" else [])
    return any(re.search(rf"(?<![\w.-]){re.escape(form)}(?![\w-]|\.\w)", summary, re.IGNORECASE) for form in forms)


def add_missing_ids(summary: str, ids: Sequence[str]) -> tuple[str, list[str]]:
    """``summary`` with the ``ids`` it does not name on one line under Critical Context, and those ids."""
    missing = [value for value in ids if not _holds(summary, value)]
    if not missing:
        return summary, []
    return add_line(summary, IDS_PREFIX, missing), missing


__all__ = ["add_missing_ids", "ids_in", "listed_ids", "typed_text", "user_ids"]
