"""A request that sent an Anthropic compaction block and was refused for it goes again with the readable summary.

The block stands for what it replaced only where the API still takes it (the beta may be withdrawn, the block
refused on this account or model). A request that carried one and was refused as a bad request (a 400, before
any output) is sent once more as every other model would get it: the summary's text, so the turn is not lost.
Where the text is taken, the block was what the API refused: the caller remembers it (``remember(True)``) and
sends the text straight away from then on; where the text is refused too, something else was wrong and the
block stays (``remember(False)``). Nothing else is resent: an overflow, a rate limit or an outage says nothing
about the block. Pure: the caller opens the streams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from pi_compact.llm.convert import Target
from pi_compact.llm.failures import Failure
from pi_compact.llm.protocol import Done, Noted, StreamEvent

NOTICE = "The provider refused the compaction block; sending its readable summary instead for this session."


class BlockSwitch:
    """A model's conversion target, whose ``blocks`` is off while the provider is known to refuse its blocks."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def remember(self, refused: bool) -> None:
        self.target = replace(self.target, blocks=not refused)


def recorded(failure_of: Callable[[BaseException], Failure],
             failures: list[Failure]) -> Callable[[BaseException], Failure]:
    """``failure_of`` that also appends each failure it classifies to ``failures``."""
    def record(exc: BaseException) -> Failure:
        failures.append(failure_of(exc))
        return failures[-1]
    return record


def text_on_refusal(events: Iterator[StreamEvent], failures: list[Failure], remember: Callable[[bool], None],
                    resend: Callable[[], Iterator[StreamEvent]]) -> Iterator[StreamEvent]:
    """``events`` of a request that sent a block; ``failures``: what its attempts failed with, as classified.
    A refusal of it as a bad request yields ``NOTICE`` and the events of ``resend()`` (which sends the text
    while ``remember(True)`` holds), then keeps the refusal only if the text was taken."""
    for event in events:
        message = event.message if isinstance(event, Done) else None
        if (message is not None and message.get("stopReason") == "error" and not message.get("content")
                and failures and failures[-1].kind == "bad_request"):
            remember(True)
            yield Noted(NOTICE)
            for resent in resend():
                if isinstance(resent, Done) and resent.message.get("stopReason") == "error":
                    remember(False)
                yield resent
            return
        yield event


__all__ = ["NOTICE", "BlockSwitch", "recorded", "text_on_refusal"]
