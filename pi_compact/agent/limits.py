"""Loop limits: when the tool loop stops although the model still calls tools (pi has no such stop).

``LoopLimits.check`` is asked once per reply that calls tools, before they run. It stops the loop when
the reply is the ``maxTurns``-th of the prompt (``--max-turns`` or the setting; None: no limit), or when
its calls make ``REPEAT_LIMIT`` identical calls in a row (same tool, same arguments): a model that
reads the same file again and again will not stop by itself. ``LoopStop.text`` is the one line said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pi_compact.agent.loop import tool_calls

# Three identical calls can still be a model checking its own work; a fourth is a loop. The refused
# call is the fourth, so a stuck model is stopped within four requests.
REPEAT_LIMIT = 4


@dataclass(frozen=True)
class LoopStop:
    """Why the loop stopped: ``text`` names the cause and what to do; ``repeated`` is the repeated call."""

    text: str
    repeated: str | None = None


def call_label(call: Mapping[str, Any]) -> str:
    """A call as the user knows it: the tool and its main argument (``read src/app.py``)."""
    raw = call.get("arguments")
    args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    main = next((str(args[k]) for k in ("path", "command", "pattern", "query") if isinstance(args.get(k), str)), "")
    return f"{call.get('name')} {main}".strip()[:80]


def _signature(call: Mapping[str, Any]) -> str:
    raw = call.get("arguments")
    return json.dumps([call.get("name"), raw if isinstance(raw, Mapping) else {}], sort_keys=True, default=str)


class LoopLimits:
    """The counts of one prompt's tool loop (a new one per prompt)."""

    def __init__(self, max_turns: int | None) -> None:
        self._max_turns = max_turns
        self._turns = 0
        self._last: str | None = None
        self._run = 0

    def check(self, reply: Mapping[str, Any]) -> LoopStop | None:
        """Count ``reply`` (it calls tools); a ``LoopStop`` when its calls must not run."""
        self._turns += 1
        for call in tool_calls(reply):
            signature = _signature(call)
            self._run = self._run + 1 if signature == self._last else 1
            self._last = signature
            if self._run >= REPEAT_LIMIT:
                label = call_label(call)
                return LoopStop(
                    f"Stopped: the model called `{label}` {self._run} times in a row with the same arguments; "
                    "the last call was not run. Say what to do differently, or try another model.", label)
        if self._max_turns is not None and self._turns >= self._max_turns:
            return LoopStop(
                f"Stopped after {self._turns} model turns (the limit, --max-turns or maxTurns, is "
                f"{self._max_turns}); the tool calls of the last reply were not run. Send a prompt to go on.")
        return None
