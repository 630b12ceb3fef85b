"""Backoff schedule for transient model failures."""

from __future__ import annotations

from pi_compact.llm.retry import backoff_delay_ms
from pi_compact.settings import RetrySettings


def test_backoff_doubles_from_the_base_delay() -> None:
    settings = RetrySettings(base_delay_ms=2000, max_delay_ms=60000)
    assert [backoff_delay_ms(a, settings) for a in range(4)] == [2000, 4000, 8000, 16000]


def test_backoff_is_capped_by_max_delay() -> None:
    settings = RetrySettings(base_delay_ms=2000, max_delay_ms=5000)
    assert backoff_delay_ms(3, settings) == 5000
