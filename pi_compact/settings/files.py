"""Reading pi's settings files and reporting where every effective value came from.

Contract:
- Files: ``<agent dir>/settings.json`` (global) and ``<cwd>/.pi/settings.json`` (project); project wins,
  merged with pi's two-level rule (``schema.merge_settings``); CLI overrides win over both.
- Reading never writes, creates or locks anything (pi only creates files or ``.pi/`` when saving).
- A missing file is normal and silent. An unreadable or malformed file yields ONE warning naming the
  file (with line and column for bad JSON) and counts as ``{}``. A bad value yields one warning naming
  the file and key; it is dropped so the same key from the other file, or the default, applies.
  An unknown key (a typo such as ``keepRecentToken``) yields one warning with a did-you-mean.
- Invalid CLI overrides raise ``UsageError``: the user typed them just now, so failing is clearer.
- The project file is read only as a regular file inside the project, up to a size cap (a link to
  ``/dev/zero`` or ``/dev/stdin`` is refused with one warning, never read).
- The project file's risky keys (``settings.trust``) apply only to a trusted directory; an ``approve``
  weaker than the global one never applies. ``LoadedSettings.trusted`` keeps the decision for reloads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pi_compact.errors import UsageError
from pi_compact.paths import PathLike, agent_dir, global_settings_path, project_settings_path
from pi_compact.project_files import read_file
from pi_compact.settings.freshness import Stamp, stamps_of
from pi_compact.settings.pi_models import read_pi_models
from pi_compact.settings.report import settings_items
from pi_compact.settings.schema import (
    KEYS,
    KEYS_BY_NAME,
    SettingProblem,
    check_settings,
    check_value,
    lookup,
    merge_settings,
    model_key,
    parse_settings,
)
from pi_compact.settings.trust import (
    TrustPolicy,
    claims,
    decide,
    strictest_approve,
    trusted_extensions,
    without_claims,
)
from pi_compact.settings.unknown_keys import unknown_key_warnings
from pi_compact.settings.values import Settings

DEFAULT_SOURCE = "default"
CLI_SOURCE = "CLI flag"


@dataclass(frozen=True)
class LoadedSettings:
    """Effective settings, the warnings produced while reading them, and each key's source.

    ``sources`` maps every key listed by ``describe`` to "default", a settings file path or "CLI flag".
    ``trusted`` names the project's risky settings that were applied (``settings.trust``), for a reload.
    """

    settings: Settings
    warnings: tuple[str, ...]
    sources: Mapping[str, str]
    trusted: tuple[str, ...] = ()
    stamps: tuple[Stamp, ...] = ()  # each file as it was read (``freshness``): /settings sees a later edit


def _problem_warning(path: Path, problem: SettingProblem) -> str:
    return f"Ignoring {problem.key} in {path}: expected {problem.expected}, got {problem.got}."


def read_settings_file(path: Path, inside: Sequence[PathLike] | None = None) -> tuple[dict[str, Any], list[str]]:
    """One file's checked settings and its warnings; a missing, unreadable or malformed file is ``{}``.

    ``inside``: the folders the file's real path must lie in (a project's own); a link out of them, a
    device or pipe, or a file over ``project_files.DEFAULT_CAP`` is not read (``project_files.read_file``).
    """
    outcome = read_file(path, inside=inside)
    if outcome.data is None:
        return {}, [f"Ignoring settings file {path}: {outcome.reason}."] if outcome.reason else []
    try:
        text = outcome.data.decode("utf-8-sig")  # pi strips a byte-order mark too
    except UnicodeDecodeError as exc:
        return {}, [f"Ignoring settings file {path}: it cannot be read ({exc})."]
    if not text:
        return {}, []
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            kind = "an array" if isinstance(raw, list) else f"the value {json.dumps(raw)[:40]}"
            return {}, [f"Ignoring settings file {path}: it must hold a JSON object, not {kind}."]
        clean, problems = check_settings(raw)
        unknown = unknown_key_warnings(raw, path)
    except json.JSONDecodeError as exc:
        return {}, [
            f"Ignoring settings file {path}: invalid JSON at line {exc.lineno}, column {exc.colno} "
            f"({exc.msg}); fix it or delete it."
        ]
    except RecursionError:
        # Arrays or objects nested thousands deep: no setting looks like that; don't die on it.
        return {}, [f"Ignoring settings file {path}: its JSON is nested too deeply to read; fix it or delete it."]
    return clean, [_problem_warning(path, problem) for problem in problems] + unknown


def _labels(tree: Mapping[str, Any], label: str) -> dict[str, Any]:
    """A tree shaped like ``tree`` down to the two levels pi merges, with ``label`` at every leaf.

    Merging label trees with ``merge_settings`` reproduces which file won each value, because the
    merge only ever looks at these two levels; anything deeper travels whole with its parent.
    """
    return {
        key: ({inner: label for inner in value} if isinstance(value, Mapping) else label)
        for key, value in tree.items()
        if value is not None
    }


def _source_of(labels: Mapping[str, Any], path: tuple[str, ...]) -> str:
    node: Any = labels
    for part in path:
        if isinstance(node, str):
            break
        if not isinstance(node, Mapping) or part not in node:
            return DEFAULT_SOURCE
        node = node[part]
    return node if isinstance(node, str) else DEFAULT_SOURCE


def _checked_overrides(cli_overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """CLI overrides by dotted key, validated; ``None`` values mean "flag not given"."""
    checked: dict[str, Any] = {}
    for name, value in (cli_overrides or {}).items():
        if value is None:
            continue
        key = KEYS_BY_NAME.get(name)
        if key is None:
            known = ", ".join(KEYS_BY_NAME)
            raise UsageError(f"Unknown setting {name!r}; use one of: {known}.")
        outcome = check_value(key, value)
        if isinstance(outcome, SettingProblem):
            raise UsageError(f"Invalid value {outcome.got} for {name}: expected {outcome.expected}.")
        checked[name] = outcome
    return checked


def _set_leaf(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
        else:
            child = dict(child)  # merged objects may be shared with a scope's tree; never mutate those
        node[part] = child
        node = child
    node[path[-1]] = value


def load_settings(
    cwd: PathLike, cli_overrides: Mapping[str, Any] | None = None, *, trust: TrustPolicy | None = None
) -> LoadedSettings:
    """Read the global and project settings files for ``cwd``, merge them, then apply CLI overrides.

    ``trust`` decides about the project's risky keys (default: only a remembered answer trusts).
    Raises ``UsageError`` only for an unknown or invalid CLI override; file problems become warnings.
    """
    overrides = _checked_overrides(cli_overrides)
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    labels: dict[str, Any] = {}
    global_path = global_settings_path()
    project_path = project_settings_path(cwd)
    scopes = [global_path] if global_path == project_path else [global_path, project_path]
    trusted = True
    accepted: tuple[str, ...] = ()
    extensions: tuple[tuple[str, str], ...] = ()
    stamps = stamps_of(scopes)  # before reading: an edit made while reading counts as one made after
    for path in scopes:
        clean, file_warnings = read_settings_file(path, (cwd,) if path == project_path else None)
        warnings.extend(file_warnings)
        if path == project_path and path != global_path:
            weaker = strictest_approve(merged, clean, path)
            warnings.extend([weaker] if weaker else [])
            found = claims(clean, cwd)
            verdict = decide(cwd, found, trust or TrustPolicy())
            trusted, accepted = verdict.trusted, verdict.accepted
            warnings.extend([verdict.note] if verdict.note else [])
            extensions = trusted_extensions(found) if trusted else ()
            clean = clean if trusted else without_claims(clean)
        merged = merge_settings(merged, clean)
        labels = merge_settings(labels, _labels(clean, os.fspath(path)))
    for name, value in overrides.items():
        _set_leaf(merged, KEYS_BY_NAME[name].path, value)
    settings, leftover = parse_settings(merged)
    warnings.extend(leftover)  # empty in practice: every scope was checked before merging
    settings = replace(settings, project_extensions=extensions)
    # pi's own models file sits beside its global settings file; a project has none (pi reads none either).
    pi_models, models_warnings = read_pi_models(agent_dir() / "models.json")
    warnings.extend(models_warnings)
    settings = replace(settings, pi_models=pi_models)
    sources = _sources(settings, merged, labels, overrides)
    return LoadedSettings(settings, tuple(warnings), MappingProxyType(sources), accepted, stamps)


def _sources(
    settings: Settings, merged: Mapping[str, Any], labels: Mapping[str, Any], overrides: Mapping[str, Any]
) -> dict[str, str]:
    sources: dict[str, str] = {}
    for key in KEYS:
        if key.dotted in overrides:
            sources[key.dotted] = CLI_SOURCE
        elif lookup(merged, key.path) is not None:
            sources[key.dotted] = _source_of(labels, key.path)
        else:
            sources[key.dotted] = DEFAULT_SOURCE
    model_labels = labels.get("models")
    for name, _override in settings.models:
        label = model_labels.get(name) if isinstance(model_labels, Mapping) else None
        sources[model_key(name)] = label if isinstance(label, str) else DEFAULT_SOURCE
    if not settings.models:
        sources["models"] = DEFAULT_SOURCE
    return sources


def describe(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """Every effective key as (dotted key, value, source), in a stable order (for ``/settings``)."""
    return [
        (key, value, loaded.sources.get(key, DEFAULT_SOURCE))
        for key, value in settings_items(loaded.settings)
    ]
