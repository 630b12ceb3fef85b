"""Keep API keys out of error texts: a provider error may quote the key it was sent.

``known_secrets(explicit, environ)`` collects the values to hide: the keys passed in (``--api-key``)
and every environment variable whose name ends in ``_API_KEY``, ``_TOKEN``, ``_SECRET``,
``_ACCESS_KEY`` or ``_PASSWORD`` (OPENAI_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY...). Values shorter
than ``MIN_SECRET_LENGTH`` are left alone: replacing "true" or "1" everywhere would garble messages
and hide nothing. ``redact(text, secrets)`` replaces each occurrence, any ``Bearer <token>`` and the
user-info part of any URL (``http://user:password@host`` becomes ``http://[redacted]@host``: an
``apiBase`` may carry a proxy's password) with ``REDACTED``. Pure: the environment is a parameter.
``redact_token_shapes(text)`` hides what looks like a credential by its shape alone (GitHub, GitLab, Slack,
OpenAI, Anthropic, AWS and Google key prefixes, a private key block, ``Bearer``, URL user-info), for text
from a session (a command's error line) where the values to hide are not known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
_SECRET_NAME_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_ACCESS_KEY", "_PASSWORD")
# A bearer credential is a secret whatever its origin (a key from a file, a proxy's own token).
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
# ``scheme://userinfo@``: greedy up to the authority's last "@" (a password may hold a raw "@"), never past
# the end of the authority (``/``, ``?``, ``#``), whitespace or a quote.
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/?#'\"<>@]*(?:@[^\s/?#'\"<>@]*)*@", re.IGNORECASE)


# Credentials recognisable by their published prefixes; the tail lengths are the providers' minimums.
_TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
)


def known_secrets(explicit: Iterable[str | None], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The secret values to hide, longest first (so a key containing another is replaced whole)."""
    values = {value for value in explicit if value}
    values.update(value for name, value in environ.items() if name.upper().endswith(_SECRET_NAME_SUFFIXES))
    kept = {value.strip() for value in values if len(value.strip()) >= MIN_SECRET_LENGTH}
    return tuple(sorted(kept, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret, bearer token and URL user-info replaced by ``REDACTED``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    text = _USERINFO.sub(lambda match: match.group(1) + REDACTED + "@", text)
    return _BEARER.sub(lambda match: match.group(1) + REDACTED, text)


def redact_token_shapes(text: str) -> str:
    """``text`` with every credential-shaped token, bearer token and URL user-info replaced by ``REDACTED``."""
    return redact(_TOKEN_SHAPES.sub(REDACTED, text), ())
