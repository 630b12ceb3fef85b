"""The settings schema: the keys a settings file may set, how each is checked, merged and built (no I/O).

``check_settings`` drops values of the wrong type or range as ``SettingProblem``s, ``merge_settings`` is
pi's two-level merge, ``parse_settings`` builds ``Settings``. A JSON ``null`` means "not set" everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pi_compact.settings.values import ModelOverride, Settings

# --- the key table ------------------------------------------------------------------------------------


Accepts = Callable[[Any], bool]
# No token count, delay or retry count comes near this; a bigger number (1e36) is a typo or a unit mix-up,
# and taken as is it would make every threshold meaningless.
MAX_WHOLE = 1_000_000_000


# ``KEYS`` (below) is the table of scalar keys a settings file may set (pi's nested camelCase layout, e.g.
# ``compaction.reserveTokens``); ``models`` is handled separately because its keys are model strings. Unknown
# keys are ignored silently because pi's files carry many keys this port does not use; a ``null`` can thus never
# null out a global value from a project file.
def _whole(minimum: int) -> Accepts:
    # JSON has one number type: 2000.0 is the same setting as 2000, but 2.5 or true are not.
    return lambda v: (
        isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer()
        and minimum <= v <= MAX_WHOLE
    )


@dataclass(frozen=True)
class Rule:
    """What a key accepts: the phrase used in warnings and the predicate that enforces it."""

    expected: str
    accepts: Accepts = field(repr=False, compare=False)
    maximum: int | None = None

    def expected_for(self, value: Any) -> str:
        """The phrase for a warning about ``value``: names the maximum when the value is above it."""
        too_big = isinstance(value, (int, float)) and not isinstance(value, bool) and self.maximum is not None \
            and value > self.maximum
        return f"{self.expected} and at most {self.maximum:,}" if too_big else self.expected


_WHOLE = Rule("a whole number >= 0", _whole(0), MAX_WHOLE)
_POSITIVE = Rule("a whole number > 0", _whole(1), MAX_WHOLE)
_BOOL = Rule("true or false", lambda v: isinstance(v, bool))
_TEXT = Rule("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip()))
_ESTIMATOR = Rule('"auto" or "chars4"', lambda v: v in ("auto", "chars4"))
_PERCENT = Rule("a whole number from 10 to 99", lambda v: _whole(10)(v) and v <= 99)
_APPROVE = Rule('"none", "edits" or "all"', lambda v: v in ("none", "edits", "all"))
_THINKING = Rule('"off", "minimal", "low", "medium", "high" or "xhigh"',
                 lambda v: v in ("off", "minimal", "low", "medium", "high", "xhigh"))
_RETENTION = Rule('"none", "short" or "long"', lambda v: v in ("none", "short", "long"))
_TEXTS = Rule("a list of non-empty strings of at most 200 characters", lambda v: (
    isinstance(v, list) and 0 < len(v) <= 20 and all(isinstance(t, str) and 0 < len(t.strip()) <= 200 for t in v)))
_REUSE = Rule('"auto", "always" or "never"', lambda v: v in ("auto", "always", "never"))
_ENGINE = Rule('"auto", "local" or "provider"', lambda v: v in ("auto", "local", "provider"))


@dataclass(frozen=True)
class SettingKey:
    """One scalar key: its dotted JSON path, the dotted ``Settings`` attribute it fills, what it accepts."""

    dotted: str
    attr: str
    rule: Rule

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.dotted.split("."))

    @property
    def expected(self) -> str:
        return self.rule.expected


KEYS: tuple[SettingKey, ...] = (
    SettingKey("compaction.enabled", "compaction.enabled", _BOOL),
    SettingKey("compaction.reserveTokens", "compaction.reserve_tokens", _WHOLE),
    SettingKey("compaction.keepRecentTokens", "compaction.keep_recent_tokens", _POSITIVE),
    SettingKey("compaction.tokenEstimator", "compaction.token_estimator", _ESTIMATOR),
    SettingKey("compaction.retainTail", "compaction.retain_tail", _BOOL),
    SettingKey("compaction.recallMaxTokens", "compaction.recall_max_tokens", _POSITIVE),
    SettingKey("compaction.autoRecallTokens", "compaction.auto_recall_tokens", _WHOLE),
    SettingKey("compaction.reusePrefix", "compaction.reuse_prefix", _REUSE),
    SettingKey("compaction.engine", "compaction.engine", _ENGINE),
    SettingKey("compaction.pinBudget", "compaction.pin_budget", _WHOLE),
    SettingKey("compaction.model", "compaction.model", _TEXT),
    SettingKey("compaction.background", "compaction.background", _BOOL),
    SettingKey("compaction.softThresholdPercent", "compaction.soft_threshold_percent", _PERCENT),
    SettingKey("compaction.clearToolResults.enabled", "compaction.clear_tool_results", _BOOL),
    SettingKey("compaction.clearToolResults.keepRecentTokens", "compaction.clear_keep_recent_tokens", _WHOLE),
    SettingKey("compaction.clearToolResults.minClearTokens", "compaction.clear_min_tokens", _POSITIVE),
    SettingKey("retry.enabled", "retry.enabled", _BOOL),
    SettingKey("retry.maxRetries", "retry.max_retries", _WHOLE),
    SettingKey("retry.baseDelayMs", "retry.base_delay_ms", _WHOLE),
    SettingKey("retry.provider.maxRetryDelayMs", "retry.max_delay_ms", _WHOLE),
    SettingKey("retry.provider.timeoutMs", "retry.timeout_ms", _POSITIVE),
    SettingKey("retry.provider.idleTimeoutMs", "retry.idle_timeout_ms", _POSITIVE),
    SettingKey("retry.provider.maxReplyBytes", "retry.max_reply_bytes", _POSITIVE),
    SettingKey("retry.provider.maxReplyMs", "retry.max_reply_ms", _POSITIVE),
    SettingKey("defaultProvider", "default_provider", _TEXT),
    SettingKey("defaultModel", "default_model", _TEXT),
    SettingKey("showThinking", "show_thinking", _BOOL),
    SettingKey("sessionDir", "session_dir", _TEXT),
    SettingKey("approve", "approve", _APPROVE),
    SettingKey("localModelPath", "local_model_path", _TEXT),
    SettingKey("defaultThinkingLevel", "default_thinking_level", _THINKING),
    SettingKey("cacheRetention", "cache_retention", _RETENTION),
    SettingKey("maxTurns", "max_turns", _POSITIVE),
)

KEYS_BY_NAME: Mapping[str, SettingKey] = {key.dotted: key for key in KEYS}

# Fields of one ``models`` entry: (JSON name, ModelOverride attribute, rule).
MODEL_FIELDS: tuple[tuple[str, str, Rule], ...] = (
    ("contextWindow", "context_window", _POSITIVE),
    ("maxTokens", "max_tokens", _POSITIVE),
    ("apiBase", "api_base", _TEXT),
    ("overflowTexts", "overflow_texts", _TEXTS),
)


def model_key(name: str) -> str:
    """How a ``models`` entry is named in warnings, sources and ``/settings`` (model strings contain dots)."""
    return f"models[{json.dumps(name)}]"


# --- checking -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingProblem:
    """A value that was ignored: ``key`` is the dotted path, ``got`` a short JSON rendering of the value."""

    key: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"Ignoring {self.key}: expected {self.expected}, got {self.got}."


def show_value(value: Any) -> str:
    """A short JSON-ish rendering of a bad value for a one-line warning."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_value(key: SettingKey, value: Any) -> Any:
    """The normalised value for ``key``, or ``SettingProblem`` if it is of the wrong type or range."""
    if key.rule.accepts(value):
        return int(value) if isinstance(value, float) else value
    return SettingProblem(key.dotted, key.rule.expected_for(value), show_value(value))


def _check_leaf(
    node: dict[str, Any], leaf: str, rule: Rule, name: str, problems: list[SettingProblem]
) -> None:
    """Keep a valid value (normalised); drop a null one silently and an invalid one with a problem."""
    if leaf not in node:
        return
    value = node[leaf]
    if value is None:
        del node[leaf]
    elif rule.accepts(value):
        node[leaf] = int(value) if isinstance(value, float) else value
    else:
        problems.append(SettingProblem(name, rule.expected_for(value), show_value(value)))
        del node[leaf]


def _copy_objects(value: Any) -> Any:
    """Copy nested dicts so checking can delete entries without touching the caller's mapping."""
    if isinstance(value, Mapping):
        return {str(k): _copy_objects(v) for k, v in value.items()}
    return value


def _migrate_legacy(tree: dict[str, Any], problems: list[SettingProblem]) -> None:
    """pi's load-time renames, applied per file so each file's legacy key competes at its own scope."""
    retry = tree.get("retry")
    if isinstance(retry, dict) and "maxDelayMs" in retry:
        legacy = retry.pop("maxDelayMs")
        provider = retry["provider"] if isinstance(retry.get("provider"), dict) else {}
        if legacy is not None and provider.get("maxRetryDelayMs") is None:
            if _WHOLE.accepts(legacy):
                retry["provider"] = {**provider, "maxRetryDelayMs": int(legacy)}
            else:
                problems.append(SettingProblem("retry.maxDelayMs", _WHOLE.expected_for(legacy), show_value(legacy)))
    # pi's own key for the same toggle; honoured so a shared pi settings file behaves the same here.
    hide = tree.get("hideThinkingBlock")
    if hide is not None and tree.get("showThinking") is None:
        if isinstance(hide, bool):
            tree["showThinking"] = not hide
        else:
            problems.append(SettingProblem("hideThinkingBlock", _BOOL.expected, show_value(hide)))


def _container(tree: dict[str, Any], path: tuple[str, ...], problems: list[SettingProblem]) -> Any:
    """Walk to the object holding the last part of ``path``; drop a non-object container (once)."""
    node = tree
    for depth, part in enumerate(path[:-1]):
        child = node.get(part)
        if child is None:
            node.pop(part, None)
            return None
        if not isinstance(child, dict):
            problems.append(SettingProblem(".".join(path[: depth + 1]), "an object", show_value(child)))
            del node[part]
            return None
        node = child
    return node


def _check_models(tree: dict[str, Any], problems: list[SettingProblem]) -> None:
    models = tree.get("models")
    if models is None:
        tree.pop("models", None)
        return
    if not isinstance(models, dict):
        problems.append(SettingProblem("models", "an object keyed by model string", show_value(models)))
        del tree["models"]
        return
    for name in list(models):
        entry = models[name]
        if not isinstance(entry, dict):
            expected = "an object with contextWindow, maxTokens or apiBase"
            problems.append(SettingProblem(model_key(name), expected, show_value(entry)))
            del models[name]
            continue
        for json_name, _attr, rule in MODEL_FIELDS:
            _check_leaf(entry, json_name, rule, f"{model_key(name)}.{json_name}", problems)


def check_settings(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[SettingProblem]]:
    """A copy of one settings mapping with legacy keys migrated and every invalid known value removed.

    Removing (rather than defaulting) a bad value lets the same key from a lower-precedence file apply.
    """
    tree: dict[str, Any] = _copy_objects(raw)
    problems: list[SettingProblem] = []
    _migrate_legacy(tree, problems)
    for key in KEYS:
        node = _container(tree, key.path, problems)
        if node is not None:
            _check_leaf(node, key.path[-1], key.rule, key.dotted, problems)
    _check_models(tree, problems)
    return tree, problems


# --- merging and building -----------------------------------------------------------------------------


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """pi 0.73.1's ``deepMergeSettings``: ``override`` wins, and only two levels are merged.

    For each top-level key of ``override`` (null or absent ones are skipped), two objects become the
    shallow spread ``{**base[key], **override[key]}``; anything else (numbers, strings, arrays) replaces.
    So ``retry.provider`` from a project file replaces the global ``retry.provider`` object entirely.
    One exception, ``models`` (our key, not pi's): an entry merges field by field, so a project that only
    sets ``contextWindow`` keeps the user's ``apiBase`` for that model instead of dropping it.
    """
    result = dict(base)
    for key, value in override.items():
        if value is None:
            continue
        current = result.get(key)
        if key == "models" and isinstance(current, Mapping) and isinstance(value, Mapping):
            both = {**current, **value}
            result[key] = {name: _merged_entry(current.get(name), entry) for name, entry in both.items()}
        elif isinstance(current, Mapping) and isinstance(value, Mapping):
            result[key] = {**current, **value}
        else:
            result[key] = value
    return result


def _merged_entry(base_entry: Any, entry: Any) -> Any:
    if isinstance(base_entry, Mapping) and isinstance(entry, Mapping):
        return {**base_entry, **entry}
    return entry


def lookup(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` in nested mappings, or None when any part is missing or null."""
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or node.get(part) is None:
            return None
        node = node[part]
    return node


def _build(clean: Mapping[str, Any]) -> Settings:
    """Settings from an already-checked mapping: present keys replace the dataclass defaults."""
    sections: dict[str, dict[str, Any]] = {"compaction": {}, "retry": {}}
    top: dict[str, Any] = {}
    for key in KEYS:
        value = lookup(clean, key.path)
        if value is None:
            continue
        section, _, attr = key.attr.rpartition(".")
        (sections[section] if section else top)[attr] = value
    models: list[tuple[str, ModelOverride]] = []
    for name, entry in (clean.get("models") or {}).items():
        values: dict[str, Any] = {
            attr: tuple(entry[json_name]) if isinstance(entry[json_name], list) else entry[json_name]
            for json_name, attr, _rule in MODEL_FIELDS if json_name in entry
        }
        models.append((name, ModelOverride(**values)))
    defaults = Settings()
    return replace(
        defaults,
        compaction=replace(defaults.compaction, **sections["compaction"]),
        retry=replace(defaults.retry, **sections["retry"]),
        models=tuple(models),
        **top,
    )


def parse_settings(merged: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    """Settings from a merged settings mapping, plus one warning per ignored value (pure, no I/O).

    Invalid values fall back to their defaults; unknown keys are ignored silently.
    """
    clean, problems = check_settings(merged)
    return _build(clean), [str(problem) for problem in problems]
