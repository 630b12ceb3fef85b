"""What litellm's bundled model map says about a model, read without importing litellm.

The facts needed before a first request (window, max output tokens, reasoning, prices, whether Anthropic
compacts on the server for the model) are in one JSON
file litellm ships, found with ``find_spec`` (which runs none of litellm) and parsed once (~25 ms).
``lookup`` answers as ``litellm.get_model_info`` would where it can do so exactly, else None.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from pi_compact.providers import DIRECT_PREFIX, SIMPLE_MAP_PREFIXES

MAP_FILE = "model_prices_and_context_window_backup.json"
_RULES_KEY = "fallback_generalizations"

# Providers whose model info litellm takes from its table alone (checked entry by entry in the tests).
SIMPLE_PROVIDERS = SIMPLE_MAP_PREFIXES
# litellm's "fill missing keys from a rule" applies only to entries of these modes.
_BACKFILL_MODES = frozenset({"chat", "responses"})
_DATED_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_FINETUNE_SUFFIX = re.compile(r"(:[^:]*){3}$")
_COMPACTION_KEY = "supports_anthropic_compaction"  # the map's mark of Anthropic's server-side compaction
_COST_KEYS = {
    "input": "input_cost_per_token",
    "output": "output_cost_per_token",
    "cacheRead": "cache_read_input_token_cost",
    "cacheWrite": "cache_creation_input_token_cost",
    "cacheWrite1h": "cache_creation_input_token_cost_above_1hr",
}


@dataclass(frozen=True)
class ModelFacts:
    """The facts of one model; ``known`` is False when the map has nothing for it (all fields empty)."""

    known: bool
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool = False
    costs: Mapping[str, float] = field(default_factory=dict)
    server_compaction: bool | None = None  # ``supports_anthropic_compaction`` (None: the map says nothing)


UNKNOWN = ModelFacts(known=False)


@dataclass(frozen=True)
class ModelLookup:
    """What resolving a model needs from the map, whoever read it (this module or litellm itself):
    None where the map does not know; ``provider`` is litellm's name for the model's provider."""

    context_window: int | None
    max_output_tokens: int | None
    reasoning: bool
    provider: str | None
    server_compaction: bool | None = None


def facts_from_info(info: Mapping[str, Any]) -> ModelFacts:
    """The facts in a model-info mapping (litellm's answer, or a map entry merged the same way)."""
    window, output = info.get("max_input_tokens"), info.get("max_output_tokens")
    return ModelFacts(
        known=True,
        context_window=window if isinstance(window, int) and not isinstance(window, bool) else None,
        max_output_tokens=output if isinstance(output, int) and not isinstance(output, bool) else None,
        reasoning=bool(info.get("supports_reasoning")),
        costs={ours: float(info.get(theirs) or 0.0) for ours, theirs in _COST_KEYS.items()},
        server_compaction=_flag(info.get(_COMPACTION_KEY)),
    )


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


class _Table:
    """The parsed map: entries (aliases resolved), a lower-case index, and the capability rules."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.entries: dict[str, Mapping[str, Any]] = {
            key: value for key, value in raw.items() if key != _RULES_KEY and isinstance(value, Mapping)
        }
        self._add_aliases()
        self.lower: dict[str, str] = {}
        for key in self.entries:
            self.lower[key.lower()] = key  # the last of several spellings wins, as in litellm's index
        block = raw.get(_RULES_KEY)
        rules = block.get("rules") if isinstance(block, Mapping) else None
        self.rules: list[tuple[re.Pattern[str], Mapping[str, Any], frozenset[str]]] = []
        for rule in rules if isinstance(rules, list) else ():
            compiled = _capability_rule(rule)
            if compiled is not None:
                self.rules.append(compiled)

    def _add_aliases(self) -> None:
        """Serve ``alias_of`` rows and ``aliases`` lists as their owner's entry, as litellm does on load.

        An alias that collides with a real entry or an earlier alias, or points at nothing, is dropped.
        """
        pointers = {k: v["alias_of"] for k, v in self.entries.items() if isinstance(v.get("alias_of"), str)}
        owners: dict[str, str] = {}
        for key, entry in self.entries.items():
            aliases = entry.get("aliases")
            if key in pointers or not isinstance(aliases, list):
                continue
            for alias in aliases:
                if (alias not in self.entries or alias in pointers) and alias not in owners:
                    owners[alias] = key
        for alias, target in pointers.items():
            if target in self.entries and target not in pointers and alias not in owners:
                owners[alias] = target
        for alias in pointers.keys() - owners.keys():
            del self.entries[alias]
        self.entries.update({alias: self.entries[owner] for alias, owner in owners.items()})

    def key(self, candidate: str) -> str | None:
        if candidate in self.entries:
            return candidate
        return self.lower.get(candidate.lower())

    def capabilities(self, name: str) -> dict[str, Any] | None:
        matched = [info for pattern, info, _ in self.rules if pattern.search(name)]
        return {k: v for info in matched for k, v in info.items()} if matched else None

    def fill_missing(self, name: str, provider: str) -> dict[str, Any] | None:
        matched = [info for pattern, info, providers in self.rules if provider in providers and pattern.search(name)]
        merged = {k: v for info in matched for k, v in info.items()}
        return merged or None


def _capability_rule(rule: object) -> tuple[re.Pattern[str], Mapping[str, Any], frozenset[str]] | None:
    """A rule litellm would use for model info (routing rules and malformed ones are skipped as it does)."""
    if not isinstance(rule, Mapping) or "extends" in rule:
        return None
    pattern, info = rule.get("pattern"), rule.get("model_info")
    if not isinstance(pattern, str) or not isinstance(info, Mapping) or "litellm_provider" in info:
        return None
    providers = rule.get("fill_missing_for_providers", [])
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        return None
    try:
        return re.compile(pattern, re.IGNORECASE), info, frozenset(providers)
    except re.error:
        return None


_lock = threading.Lock()
_table: _Table | None = None
_unavailable = False


def bundled_map_path() -> Path | None:
    """litellm's bundled map file, located without importing litellm (None if litellm is absent)."""
    try:
        spec = find_spec("litellm")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        candidate = Path(location) / MAP_FILE
        if candidate.is_file():
            return candidate
    return None


def _uses_bundled_map() -> bool:
    # The model layer defaults this to "True" before importing litellm; a user's explicit "False" makes
    # litellm download the map instead, and then only litellm knows what it says.
    value = os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return value.strip().lower() == "true"


def _load() -> _Table | None:
    global _table, _unavailable
    with _lock:
        if _table is None and not _unavailable:
            path = bundled_map_path()
            try:
                raw = json.loads(path.read_bytes()) if path is not None else None
            except (OSError, ValueError):
                raw = None
            if isinstance(raw, Mapping):
                _table = _Table(raw)
            else:
                _unavailable = True
        return _table


def is_openai_catalog_model(name: str) -> bool | None:
    """Is ``name`` one of OpenAI's own models in the map (litellm then applies that model's request rules)?

    None when the map cannot be read. Fine-tune price rows (``ft:base``) do not count, as in litellm.
    """
    table = _load() if _uses_bundled_map() else None
    if table is None:
        return None
    entry = table.entries.get(name)
    if entry is None:
        return False
    provider = entry.get("litellm_provider")
    if provider == DIRECT_PREFIX:
        return not (name.startswith("ft:") and name.count(":") <= 1)
    return provider == "text-completion-openai"


def lookup(model: str) -> ModelFacts | None:
    """The map's facts for ``model`` as litellm would give them, or None when only litellm can tell.

    Only ``provider/name`` strings whose provider is in ``SIMPLE_PROVIDERS`` are answered: providers
    litellm serves from its plain table (no server query, no special key mapping, no region or version
    rules). litellm's order is followed: the key as given, then the name without the provider, then
    both without a dated snapshot suffix (``-2024-08-06``) or fine-tune suffix
    (``ft:base:org:name:id``); exact keys before case-insensitive ones; ``alias_of`` rows resolve to
    their owner; an entry of another provider does not count. A model no key matches is described by
    the map's capability rules (``fallback_generalizations``) when one matches, else it is unknown
    (``tests/llm/test_llm_model_map.py`` checks every entry against litellm). None too when litellm would
    not read this file (``LITELLM_LOCAL_MODEL_COST_MAP`` not true: it downloads the map) or is absent.
    """
    provider, slash, name = model.partition("/")
    if not slash or provider not in SIMPLE_PROVIDERS or not name or not _uses_bundled_map():
        return None
    table = _load()
    if table is None:
        return None
    candidates = _candidates(model, name)
    for candidate in candidates:
        key = table.key(candidate)
        if key is None:
            continue
        entry = table.entries[key]
        if entry.get("litellm_provider") not in (None, provider):
            continue
        return facts_from_info(_with_filled_gaps(table, key, entry))
    if any(table.key(candidate) is not None for candidate in candidates):
        return UNKNOWN  # known under another provider only: litellm calls that "not mapped"
    for candidate in candidates:
        info = table.capabilities(candidate)
        if info is not None:
            return facts_from_info(info)
    return UNKNOWN


def _candidates(model: str, name: str) -> tuple[str, ...]:
    """litellm's lookup order for a provider-prefixed model (duplicates kept: order is what matters)."""
    stripped = _strip(model)
    return (model, model, model, name, stripped, stripped, model)


def _strip(model: str) -> str:
    if "ft:" in model:
        return _FINETUNE_SUFFIX.sub("", model)
    return _DATED_SUFFIX.sub("", model)


def _with_filled_gaps(table: _Table, key: str, entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """An entry completed by the rules flagged to fill missing keys for its provider, as litellm does."""
    mode, provider = entry.get("mode", "chat"), entry.get("litellm_provider", "")
    if not isinstance(mode, str) or mode not in _BACKFILL_MODES or not isinstance(provider, str):
        return entry
    filled = table.fill_missing(key, provider)
    if filled is None:
        return entry
    return {**{k: v for k, v in filled.items() if k not in entry}, **entry}
