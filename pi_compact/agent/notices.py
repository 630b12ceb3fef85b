"""What the session tells the user when compaction cannot help: the sentences, built from its numbers.

Pure: each function returns one message naming what happened and what to change.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_compact.compaction.tokens import ContextUsage, Estimator
from pi_compact.llm.protocol import ModelInfo
from pi_compact.messages import Message
from pi_compact.paths import settings_path_hint
from pi_compact.settings import model_key

OVERFLOW_GIVE_UP = (
    "Context overflow recovery failed after one compact-and-retry attempt. Reduce the context "
    "(e.g. /compact with instructions, or start a /new session) or switch to a model with a larger window."
)


def window_hint(info: ModelInfo) -> str:
    """Said when the provider overflows with nothing left to compact: our window is likely too big."""
    return (
        f"The provider reports a context overflow and there is nothing to compact: the context window known "
        f"for {info.model} is {info.context_window:,} tokens; if the provider's real limit is smaller, set "
        f"{model_key(info.model)}.contextWindow in {settings_path_hint()} or pass --context-window."
    )


def still_too_full(usage: ContextUsage, messages: Sequence[Message], estimator: Estimator) -> str:
    """After a compaction that left the context past the threshold: by how much, and the biggest kept message.

    Without this the user only sees compaction after compaction (peers' "thrash" complaints).
    """
    biggest = max(messages, key=estimator, default=None)
    culprit = ""
    if biggest is not None:
        name = f" of {biggest.get('toolName')}" if biggest.get("toolName") else ""
        culprit = f" The largest kept message is a {biggest.get('role')}{name} of about {estimator(biggest):,} tokens."
    return (
        f"Compaction could not bring the context under the auto-compaction threshold "
        f"({usage.tokens:,} of {usage.threshold:,} tokens after compacting).{culprit} "
        "Lower compaction.keepRecentTokens or use a model with a larger window."
    )


__all__ = ["OVERFLOW_GIVE_UP", "still_too_full", "window_hint"]
