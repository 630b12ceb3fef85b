"""Settings values: the frozen dataclasses that hold every default, and nothing else.

Contract: these field defaults are the package's only copy of each default (pi repeats some of its
compaction defaults in two places; we do not). Plain values, no I/O: ``schema`` fills them from pi's
JSON layout, ``files`` reads the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pi_compact.settings.pi_models import PiModels

TokenEstimator = Literal["auto", "chars4"]


@dataclass(frozen=True)
class CompactionSettings:
    """pi's ``compaction.*`` keys plus ours (``tokenEstimator``, ``retainTail``, ``recallMaxTokens``,
    ``pinBudget``: None means 15 % of the model's window; ``model``: the litellm model string that
    writes summaries, None meaning the chat model; ``background`` and ``softThresholdPercent``:
    summarize ahead, from that share of the threshold on, see ``agent.compaction.background``)."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    token_estimator: TokenEstimator = "auto"
    retain_tail: bool = True
    recall_max_tokens: int = 4000
    auto_recall_tokens: int = 1000  # ``compaction.autoRecallTokens``: 0 turns automatic recall off
    # ``compaction.reusePrefix``: ask for the summary on top of the last chat request's prefix, which the
    # provider has cached ("auto": where the provider caches prompts, "always", "never").
    reuse_prefix: str = "auto"
    # ``compaction.engine``: who writes the summary: "local" (pi-compact's own request), "provider" (the
    # provider's own compaction where the model has it, ours elsewhere) or "auto" (the provider's where it
    # is expected to cost no more than ours). Not yet acted on: ``agent.compaction`` reads it (issue 45).
    engine: str = "auto"
    pin_budget: int | None = None
    model: str | None = None
    background: bool = False
    soft_threshold_percent: int = 70
    # ``compaction.clearToolResults``: old tool results leave the request (never the file) before anything
    # is summarized, see ``compaction.clearing``. None: scaled to the window (``clearing.rules_at``).
    clear_tool_results: bool = True
    clear_keep_recent_tokens: int | None = None
    clear_min_tokens: int | None = None


@dataclass(frozen=True)
class RetrySettings:
    """pi's ``retry.*`` keys: transient provider errors are retried with exponential backoff.

    ``max_delay_ms`` is ``retry.provider.maxRetryDelayMs`` (formerly ``retry.maxDelayMs``).
    ``timeout_ms`` (pi's ``retry.provider.timeoutMs``) is how long a reply may take to start: connection,
    the server reading the prompt, first token. ``idle_timeout_ms`` (``retry.provider.idleTimeoutMs``,
    ours) is the longest silence once it streams. Keep-alive comments do not count as progress.
    ``max_reply_bytes`` and ``max_reply_ms`` (``retry.provider.maxReplyBytes`` / ``maxReplyMs``, ours) end a
    reply that never does: past that much streamed content (UTF-8 bytes of text, thinking and tool-call
    arguments) or that long since the request, it is stopped as an error, keeping what streamed. The
    defaults are far above any model's output limit (128k tokens are about 0.5 MB) and slowest honest reply.
    """

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60000
    timeout_ms: int = 300_000
    idle_timeout_ms: int = 120_000
    max_reply_bytes: int = 16_000_000
    max_reply_ms: int = 3_600_000


@dataclass(frozen=True)
class ModelOverride:
    """One entry of the ``models`` map: per-model corrections to what litellm knows."""

    context_window: int | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    # Error texts (matched case-insensitively anywhere in the provider's error) that mean "the prompt did
    # not fit the window", for a server whose wording pi-compact does not know.
    overflow_texts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    """Every effective setting. Built by ``parse_settings``; defaults live only here."""

    compaction: CompactionSettings = CompactionSettings()
    retry: RetrySettings = RetrySettings()
    default_provider: str | None = None
    default_model: str | None = None
    models: tuple[tuple[str, ModelOverride], ...] = ()
    show_thinking: bool = True
    session_dir: str | None = None
    approve: str = "none"  # "none" (pi's way), "edits" (ask before write/edit) or "all" (also bash)
    local_model_path: str | None = None  # a GGUF file for ``--model local`` instead of the bundled model
    # pi's thinking level for a new session (off | minimal | low | medium | high | xhigh); None: pi's
    # default ("medium" where the model can think, see ``llm.thinking``).
    default_thinking_level: str | None = None
    # Prompt-cache retention (none | short | long), pi-ai's ``cacheRetention`` option; None: "short",
    # or "long" when PI_CACHE_RETENTION=long (pi has no settings key for it, only the variable).
    cache_retention: str | None = None
    max_turns: int | None = None  # ``maxTurns``: model replies per prompt before the tool loop stops (None: no limit)
    # The working directory's ``.pi/extensions/`` files that may load, as (file name, SHA-256 of the content
    # trusted): only these, with exactly that content (``settings.trust``); not a settings-file key.
    project_extensions: tuple[tuple[str, str], ...] = ()
    # pi's ``models.json`` of the user's agent directory (``settings.pi_models``); not a settings-file key.
    pi_models: PiModels = PiModels()

    def model_override(self, model: str) -> ModelOverride | None:
        """The ``models`` entry for a model string, if the user configured one."""
        for name, override in self.models:
            if name == model:
                return override
        return None
