"""AppOptions: what the command line says about one run of the agent, as one frozen value.

Stdlib only, so every layer may read it (the terminal shows where a setting came from) without
importing the composition root that acts on it (``cli.wiring``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AppOptions:
    """Everything the command line says about one run."""

    cwd: Path
    prompt: str | None = None
    mode: str = "text"
    # The model the run starts with, chosen once by the CLI (``cli.choices.choose_model``): --model, else
    # the settings' defaultModel; None when neither is set (the model layer then picks the embedded model).
    model: str | None = None
    model_from_settings: bool = False  # ``model`` is defaultModel, not the --model flag
    api_base: str | None = None
    api_key: str | None = None
    context_window: int | None = None
    session: Path | None = None
    continue_recent: bool = False
    no_session: bool = False
    auto_compact: bool = True
    extensions: tuple[Path, ...] = ()
    session_dir: str | None = None
    approve: str | None = None  # --approve: none, edits or all (else the ``approve`` setting)
    compaction_model: str | None = None  # --compaction-model (else the ``compaction.model`` setting)
    local_model_path: str | None = None  # --local-model-path (else the ``localModelPath`` setting)
    trust_project: bool = False  # --trust-project: apply the project's risky settings (``settings.trust``)
    thinking: str | None = None  # --thinking (else the session's level, else defaultThinkingLevel)
    max_turns: int | None = None  # --max-turns (else the ``maxTurns`` setting)

    def settings_overrides(self) -> dict[str, object]:
        """The settings the flags set, by dotted key (for ``load_settings``, at start and on reload)."""
        flags = {"compaction.model": self.compaction_model, "localModelPath": self.local_model_path,
                 "maxTurns": self.max_turns, "approve": self.approve}
        return {key: value for key, value in flags.items() if value}

