"""Project trust: which settings of a cloned repository's ``.pi/`` may send data elsewhere or run code,
and whether they apply.

Contract:
- Risky (``claims``): a ``models.<name>`` field other than ``contextWindow``/``maxTokens`` (``apiBase``
  and anything key- or header-like: where the user's API key and conversation go), ``compaction.model``
  (where every summary request goes), ``localModelPath`` (a model file of the repository's choosing),
  ``defaultModel`` and ``defaultProvider`` (which of the user's providers gets the conversation, and whose key
  command runs), ``sessionDir`` and every ``.pi/extensions/*.py`` (code run at start). Every other key is
  safe and applies without asking.
- ``approve`` in a project file can only make approval stricter than the global value (or the default):
  a weaker one never applies, trusted or not; ``strictest_approve`` drops it with a warning.
- A claim is shown whole (``Claim.shown``: the full value as ASCII JSON, never cut), and what is trusted
  is exactly that: the remembered fingerprint and a run's ``accepted`` cover every claim's full value, and
  an extension's claim carries the SHA-256 of its content, so a changed value or file is asked about again.
- ``sessionDir`` is risky too: a project could have the transcripts (tool output, file contents) written
  into its own worktree, to be committed and pushed.
- ``decide`` says whether the claims apply: ``--trust-project``, else a remembered answer
  (``trust_store``), else the question (``TrustPolicy.ask``, only where someone can answer), else not.
- Settings are resolved once, before any model is built, so nothing untrusted ever reaches a request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pi_compact.paths import PROJECT_CONFIG_DIR, PathLike
from pi_compact.project_files import content_hash, read_file
from pi_compact.settings.schema import model_key
from pi_compact.settings.trust_store import remember, remembered, store_path

Answer = Literal["trust", "once", "ignore", "skip"]  # "skip": ignore this time, remember nothing
SAFE_MODEL_FIELDS = frozenset({"contextWindow", "maxTokens"})
RISKY_KEYS: tuple[tuple[str, ...], ...] = (
    ("compaction", "model"), ("localModelPath",), ("sessionDir",), ("defaultProvider",), ("defaultModel",))
APPROVE_ORDER = {"none": 0, "edits": 1, "all": 2}
HOW_TO_TRUST = "run with --trust-project to use them, or answer the trust question in the terminal"


@dataclass(frozen=True)
class Claim:
    """One risky thing a project wants: its key (or extension file) and the whole value as shown; an
    extension's claim also carries the SHA-256 of the content it was shown for (``digest``)."""

    key: str
    shown: str
    digest: str | None = None

    @property
    def canonical(self) -> str:
        """What trusting this claim remembers: the key and the whole value, unambiguously."""
        return json.dumps([self.key, self.shown], ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True)
class TrustPolicy:
    """How to decide: ``flag`` is ``--trust-project``; ``ask`` puts the question (None: nobody can answer)."""

    flag: bool = False
    ask: Callable[[Path, tuple[Claim, ...]], Answer] | None = None
    # Claims already trusted in this run (``Verdict.accepted`` of the start): a reload keeps them, and
    # anything new or changed since then is not trusted without the flag or a remembered answer.
    accepted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """Whether the project's claims apply, and the one line to show when they do not (else None)."""

    trusted: bool
    note: str | None = None
    accepted: tuple[str, ...] = ()  # the claims trusted, as ``Claim.canonical`` strings


def _shown(value: Any) -> str:
    # The whole value, never cut: a cut would let a change past it through unasked. ASCII: a value shown at
    # the question cannot repaint it; sorted keys: the same value always reads (and fingerprints) the same.
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


def _extension_claim(path: Path) -> Claim:
    key = f"{PROJECT_CONFIG_DIR}/extensions/{path.name}"
    outcome = read_file(path)
    if outcome.data is None:  # it will not load either (``agent.extensions`` reads it the same way)
        return Claim(key, f"not loaded: {outcome.reason or 'it is gone'}")
    digest = content_hash(outcome.data)
    return Claim(key, f"runs Python code at start ({len(outcome.data):,} bytes, SHA-256 {digest})", digest)


def extension_files(cwd: PathLike) -> list[Path]:
    """The project's extension files (``.pi/extensions/*.py``), in load order."""
    folder = Path(cwd) / PROJECT_CONFIG_DIR / "extensions"
    try:
        return sorted(p for p in folder.glob("*.py") if p.is_file()) if folder.is_dir() else []
    except OSError:
        return []


def claims(project: Mapping[str, Any], cwd: PathLike) -> tuple[Claim, ...]:
    """Every risky setting in a project's checked settings, and its extension files."""
    found: list[Claim] = []
    models = project.get("models")
    if isinstance(models, Mapping):
        for name, entry in models.items():
            if isinstance(entry, Mapping):
                found.extend(Claim(f"{model_key(name)}.{field}", _shown(value)) for field, value in entry.items()
                             if field not in SAFE_MODEL_FIELDS and value is not None)
    for path in RISKY_KEYS:
        node: Any = project
        for part in path:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            found.append(Claim(".".join(path), _shown(node)))
    found.extend(_extension_claim(p) for p in extension_files(cwd))
    return tuple(found)


def trusted_extensions(found: Iterable[Claim]) -> tuple[tuple[str, str], ...]:
    """The extension files among trusted claims, as (file name, SHA-256): only these, with exactly this
    content, may load (``Settings.project_extensions``)."""
    return tuple((claim.key.rsplit("/", 1)[-1], claim.digest) for claim in found if claim.digest is not None)


def _safe_entry(entry: Any) -> Any:
    """A project's ``models`` entry without its risky fields (the global entry's fields stay: entries merge
    field by field, ``schema.merge_settings``)."""
    if not isinstance(entry, Mapping):
        return entry
    return {k: v for k, v in entry.items() if k in SAFE_MODEL_FIELDS}


def without_claims(project: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a project's checked settings with every risky key removed. Extensions are left to
    ``Settings.project_extensions``."""
    tree = dict(project)
    models = tree.get("models")
    if isinstance(models, Mapping):
        tree["models"] = {name: _safe_entry(entry) for name, entry in models.items()}
    for path in RISKY_KEYS:
        if len(path) == 1:
            tree.pop(path[0], None)
        elif isinstance(tree.get(path[0]), Mapping):
            tree[path[0]] = {k: v for k, v in tree[path[0]].items() if k != path[1]}
    return tree


def strictest_approve(global_tree: Mapping[str, Any], project: dict[str, Any], project_path: Path) -> str | None:
    """Drop a project ``approve`` weaker than the global one (in place); the warning, or None."""
    wanted = project.get("approve")
    current = global_tree.get("approve") or "none"
    if wanted not in APPROVE_ORDER or APPROVE_ORDER[wanted] >= APPROVE_ORDER.get(current, 0):
        return None
    del project["approve"]
    return (f"Ignoring approve {json.dumps(wanted)} in {project_path}: a project file can only make approval "
            f"stricter than the global {json.dumps(current)}.")


def decide(cwd: PathLike, found: Iterable[Claim], policy: TrustPolicy) -> Verdict:
    """Whether ``found`` (a project's claims) apply under ``policy``; asks at most once."""
    found = tuple(found)
    keys = [claim.canonical for claim in found]
    if not found or policy.flag or set(keys) <= set(policy.accepted):
        return Verdict(True, accepted=tuple(keys))
    answer: Answer | None = remembered(cwd, keys)
    saved: str | None = None  # what saving the answer had to say
    if answer is None and policy.ask is not None:
        answer = policy.ask(Path(cwd), found)
        if answer in ("trust", "ignore"):
            try:
                saved = remember(cwd, answer, keys)
            except OSError as exc:
                note = f"The trust answer could not be saved ({exc.strerror or exc})."
                return Verdict(answer == "trust", note, tuple(keys) if answer == "trust" else ())
    if answer in ("trust", "once"):
        return Verdict(True, saved, accepted=tuple(keys))
    names = ", ".join(claim.key for claim in found)
    how = HOW_TO_TRUST
    if answer == "ignore":
        how = f"you chose to ignore them (remembered in {store_path()}); --trust-project uses them"
    note = (f"Ignoring this project's risky settings ({names}) in {Path(cwd) / PROJECT_CONFIG_DIR}: they could "
            f"send your keys or conversation elsewhere or run code; {how}.")
    return Verdict(False, f"{note} {saved}" if saved else note)


__all__ = [
    "HOW_TO_TRUST", "SAFE_MODEL_FIELDS", "Answer", "Claim", "TrustPolicy", "Verdict", "claims", "decide",
    "extension_files", "strictest_approve", "trusted_extensions", "without_claims",
]
