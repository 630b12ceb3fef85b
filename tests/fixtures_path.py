"""Where the shared reference fixtures live (``../shared/fixtures``, or ``$PI_COMPACT_FIXTURES``), and the skip
used without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A git worktree lives one level deeper than the project: PI_COMPACT_FIXTURES points there instead.
FIXTURES = Path(os.environ.get("PI_COMPACT_FIXTURES") or Path(__file__).resolve().parents[2] / "shared" / "fixtures")
PARITY = FIXTURES / "parity"

needs_fixtures = pytest.mark.skipif(
    not PARITY.is_dir(), reason=f"shared reference fixtures not present at {FIXTURES} (only in the team's workspace)"
)


def parity_sessions() -> list[Path]:
    """Every reference session, or none when the fixtures are absent."""
    return sorted(PARITY.glob("*.jsonl")) if PARITY.is_dir() else []
