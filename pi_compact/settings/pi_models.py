"""pi's ``models.json`` (``$PI_CODING_AGENT_DIR/models.json``, else ``~/.pi/agent/models.json``), read as pi reads it.

``read_pi_models(path)`` returns the file as plain values and its warnings; it never raises. pi's rules:
JSON with ``//`` comments and trailing commas (``pi_json``); a file that breaks the schema or the checks is ignored
whole (pi keeps only its built-in models then) and said in one warning naming the file; a custom
provider (one pi does not ship) with models needs ``baseUrl`` and ``apiKey``, and each model an ``api``
(its own or its provider's); a model's ``contextWindow`` defaults to 128,000 and ``maxTokens`` to 16,384;
``compat`` of the model is merged over the provider's. Only the user's own agent directory is read: a
project cannot declare providers (no project-level models file exists in pi either).

What pi-compact uses of it (``llm/custom_models.py``): providers' ``baseUrl``, ``api``, ``apiKey`` (a variable's
name, a literal, or ``!command``), ``headers`` (each value resolved as ``apiKey`` is), ``authHeader`` and every
``compat`` flag pi 0.73.1 knows (``model_facts.Compat``); models' ``id``, ``api``, ``baseUrl``, ``reasoning``,
``contextWindow``, ``maxTokens``, ``cost``, ``headers`` and ``compat``; ``modelOverrides``' ``contextWindow``,
``maxTokens``, ``reasoning``, ``headers`` and ``compat`` for a provider's built-in models; and pi-compact's own
``overflowTexts`` (provider or model: the server's words for "the prompt is too long") and ``serverCompaction``
(model or ``modelOverrides``: whether the provider compacts on its server for it). Other keys (``name``,
``input``, ``thinkingLevelMap``...) are accepted and not used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_compact.model_facts import COMPAT_KEYS, Compat
from pi_compact.providers import CACHE_CONTROL_FORMATS, THINKING_FORMATS, pi_builtin_api
from pi_compact.settings.pi_json import loads_pi_json

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_TOKENS = 16_384
_COST_KEYS = ("input", "output", "cacheRead", "cacheWrite")


@dataclass(frozen=True)
class PiModel:
    """One model of a provider in ``models.json``, with the provider's values filled in as pi fills them."""

    provider: str
    id: str
    api: str
    base_url: str | None
    api_key: str | None  # as written: a variable's name, a literal, or "!command"
    reasoning: bool = False
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_tokens: int = DEFAULT_MAX_TOKENS
    cost: tuple[tuple[str, float], ...] = ()  # dollars per million tokens, by pi's keys
    compat: Compat = Compat()
    overflow_texts: tuple[str, ...] = ()  # ``overflowTexts`` of the model and its provider (ours, not pi's)
    server_compaction: bool = False  # ``serverCompaction`` (ours): its API compacts on the server for it
    # The provider's ``headers``, then the model's (a later name wins), values as written; ``authHeader``.
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    auth_header: bool = False


@dataclass(frozen=True)
class PiModelOverride:
    """``modelOverrides.<id>`` of a provider: corrections to one of its built-in models."""

    context_window: int | None = None
    max_tokens: int | None = None
    reasoning: bool | None = None
    server_compaction: bool | None = None  # ``serverCompaction`` (ours); None: the model map decides
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    compat: Compat = Compat()


@dataclass(frozen=True)
class PiProvider:
    """A provider's own values: a built-in one's ``baseUrl`` override, any provider's key and compat."""

    name: str
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None
    compat: Compat = Compat()
    overrides: tuple[tuple[str, PiModelOverride], ...] = ()
    overflow_texts: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    auth_header: bool = False  # ``authHeader``: the key also goes as ``Authorization: Bearer``


@dataclass(frozen=True)
class PiModels:
    """Everything pi-compact uses of one ``models.json``; empty when there is none (or it was ignored)."""

    path: str | None = None
    providers: tuple[PiProvider, ...] = ()
    models: tuple[PiModel, ...] = field(default=())

    def provider(self, name: str) -> PiProvider | None:
        return next((p for p in self.providers if p.name == name), None)

    def model(self, provider: str, model_id: str) -> PiModel | None:
        return next((m for m in self.models if m.provider == provider and m.id == model_id), None)

    def model_override(self, provider: str, model_id: str) -> PiModelOverride | None:
        entry = self.provider(provider)
        return None if entry is None else dict(entry.overrides).get(model_id)


class _Invalid(ValueError):
    """The file breaks pi's schema or checks: pi then ignores all of it."""


def read_pi_models(path: Path) -> tuple[PiModels, list[str]]:
    """``path`` as values, and the warnings (at most one). A missing file is an empty ``PiModels``."""
    try:
        if not path.exists():
            return PiModels(), []
        if not path.is_file():
            return PiModels(), [f"Ignoring {path}: it is not a regular file."]
        if path.stat().st_size > 1_000_000:  # pi's examples are a few KB: a larger file is not a model list
            return PiModels(), [f"Ignoring {path}: it is larger than 1 MB."]
        text = path.read_text(encoding="utf-8")  # a byte-order mark stays: JSON.parse refuses it, so pi does
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return PiModels(), [f"Ignoring {path}: it cannot be read ({reason})."]
    return parse_pi_models(text, str(path))


def parse_pi_models(text: str, path: str) -> tuple[PiModels, list[str]]:
    """The text of a models file as values; a file pi would refuse is ignored with one warning."""
    if not text.strip():
        return PiModels(path=path), []
    try:
        raw = loads_pi_json(text)
    except json.JSONDecodeError as exc:
        hint = " (pi reads // comments, not /* */)" if exc.doc.startswith("/*", exc.pos) else ""
        return PiModels(), [f"Ignoring {path}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})"
                            f"{hint}; pi ignores it too: fix it or delete it."]
    except RecursionError:
        return PiModels(), [f"Ignoring {path}: its JSON is nested too deeply to read."]
    try:
        return _parse(raw, path), []
    except _Invalid as exc:
        return PiModels(), [f"Ignoring {path}: {exc} (pi ignores the whole file too)."]


def _parse(raw: Any, path: str) -> PiModels:
    if not isinstance(raw, dict) or not isinstance(raw.get("providers"), dict):
        raise _Invalid('it must be an object with a "providers" object')
    providers: list[PiProvider] = []
    models: list[PiModel] = []
    for name, config in raw["providers"].items():
        if not isinstance(config, dict):
            raise _Invalid(f"provider {name} must be an object")
        provider = _provider(name, config)
        providers.append(provider)
        models.extend(_models(provider, config))
    return PiModels(path=path, providers=tuple(providers), models=tuple(models))


def _provider(name: str, config: dict[str, Any]) -> PiProvider:
    base_url = _text(config, "baseUrl", f"provider {name}")
    api = _text(config, "api", f"provider {name}")
    api_key = _text(config, "apiKey", f"provider {name}")
    model_defs = config.get("models") or []
    if not isinstance(model_defs, list):
        raise _Invalid(f'provider {name}: "models" must be an array')
    overrides = config.get("modelOverrides") or {}
    if not isinstance(overrides, dict):
        raise _Invalid(f'provider {name}: "modelOverrides" must be an object')
    if not model_defs and not (base_url or config.get("headers") or config.get("compat") or overrides):
        raise _Invalid(f'provider {name}: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models"')
    if model_defs and pi_builtin_api(name) is None:  # a provider pi does not ship
        if not base_url:
            raise _Invalid(f'provider {name}: "baseUrl" is required when defining custom models')
        if not api_key:
            raise _Invalid(f'provider {name}: "apiKey" is required when defining custom models')
    auth_header = config.get("authHeader", False)
    if not isinstance(auth_header, bool):
        raise _Invalid(f'provider {name}: "authHeader" must be true or false')
    return PiProvider(
        name=name, base_url=base_url, api=api, api_key=api_key, compat=_compat(config, f"provider {name}"),
        overrides=tuple((model_id, _override(name, model_id, entry)) for model_id, entry in overrides.items()),
        overflow_texts=_texts(config, f"provider {name}"), headers=_headers(config, f"provider {name}"),
        auth_header=auth_header,
    )


def _models(provider: PiProvider, config: dict[str, Any]) -> list[PiModel]:
    out: list[PiModel] = []
    for entry in config.get("models") or []:
        where = f"provider {provider.name}"
        if not isinstance(entry, dict):
            raise _Invalid(f"{where}: every model must be an object")
        model_id = _text(entry, "id", where)
        if not model_id:
            raise _Invalid(f'{where}: model missing "id"')
        where = f"provider {provider.name}, model {model_id}"
        api = _text(entry, "api", where) or provider.api or pi_builtin_api(provider.name)
        if not api:
            raise _Invalid(f'{where}: no "api" specified. Set at provider or model level')
        window = _positive(entry, "contextWindow", where)
        max_tokens = _positive(entry, "maxTokens", where)
        reasoning = entry.get("reasoning", False)
        if not isinstance(reasoning, bool):
            raise _Invalid(f'{where}: "reasoning" must be true or false')
        out.append(PiModel(
            provider=provider.name, id=model_id, api=api,
            base_url=_text(entry, "baseUrl", where) or provider.base_url, api_key=provider.api_key,
            reasoning=reasoning, context_window=window or DEFAULT_CONTEXT_WINDOW,
            max_tokens=max_tokens or DEFAULT_MAX_TOKENS, cost=_cost(entry, where),
            compat=_compat(entry, where).over(provider.compat),
            overflow_texts=(*_texts(entry, where), *provider.overflow_texts),
            server_compaction=_flag(entry, "serverCompaction", where) or False,
            headers=(*provider.headers, *_headers(entry, where)), auth_header=provider.auth_header,
        ))
    return out


def _override(provider: str, model_id: str, entry: Any) -> PiModelOverride:
    where = f"provider {provider}, modelOverrides {model_id}"
    if not isinstance(entry, dict):
        raise _Invalid(f"{where} must be an object")
    reasoning = entry.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, bool):
        raise _Invalid(f'{where}: "reasoning" must be true or false')
    return PiModelOverride(_positive(entry, "contextWindow", where), _positive(entry, "maxTokens", where), reasoning,
                           _flag(entry, "serverCompaction", where), _headers(entry, where), _compat(entry, where))


def _flag(config: dict[str, Any], key: str, where: str) -> bool | None:
    value = config.get(key)
    if value is not None and not isinstance(value, bool):
        raise _Invalid(f'{where}: "{key}" must be true or false')
    return value


def _text(config: dict[str, Any], key: str, where: str) -> str | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _Invalid(f'{where}: "{key}" must be a non-empty string')
    return value


def _positive(config: dict[str, Any], key: str, where: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Invalid(f'{where}: "{key}" must be a number')
    if value <= 0:
        raise _Invalid(f"{where}: invalid {key}")
    return int(value)


# The values pi's schema allows for the compat keys that are not true/false.
_COMPAT_CHOICES = {
    "maxTokensField": ("max_completion_tokens", "max_tokens"),
    "thinkingFormat": THINKING_FORMATS,
    "cacheControlFormat": CACHE_CONTROL_FORMATS,
}
_COMPAT_OBJECTS = ("openRouterRouting", "vercelGatewayRouting")


def _compat(config: dict[str, Any], where: str) -> Compat:
    """``compat``: every flag pi 0.73.1 knows, checked as its schema checks it; unknown keys are ignored."""
    compat = config.get("compat")
    if compat is None:
        return Compat()
    if not isinstance(compat, dict):
        raise _Invalid(f'{where}: "compat" must be an object')
    found: dict[str, Any] = {}
    for key, name in COMPAT_KEYS.items():
        value = compat.get(key)
        if value is None:
            continue
        if key in _COMPAT_OBJECTS:
            if not isinstance(value, dict):
                raise _Invalid(f'{where}: "compat.{key}" must be an object')
            value = json.dumps(value, sort_keys=True)
        elif key in _COMPAT_CHOICES:
            if value not in _COMPAT_CHOICES[key]:
                raise _Invalid(f'{where}: "compat.{key}" must be one of ' + ", ".join(_COMPAT_CHOICES[key]))
        elif not isinstance(value, bool):
            raise _Invalid(f'{where}: "compat.{key}" must be true or false')
        found[name] = value
    return Compat(**found)


def _headers(config: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """``headers``: names to values as written (a variable's name, a literal, or "!command", as ``apiKey``)."""
    headers = config.get("headers")
    if headers is None:
        return ()
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in headers.items()):
        raise _Invalid(f'{where}: "headers" must be an object of strings')
    return tuple(headers.items())


def _texts(config: dict[str, Any], where: str) -> tuple[str, ...]:
    """``overflowTexts``: pi-compact's own key (pi ignores keys it does not know, so the file stays pi's)."""
    texts = config.get("overflowTexts")
    if texts is None:
        return ()
    if not isinstance(texts, list) or not all(isinstance(t, str) and 0 < len(t.strip()) <= 200 for t in texts):
        raise _Invalid(f'{where}: "overflowTexts" must be a list of non-empty strings of at most 200 characters')
    return tuple(texts)


def _cost(config: dict[str, Any], where: str) -> tuple[tuple[str, float], ...]:
    cost = config.get("cost")
    if cost is None:
        return ()
    if not isinstance(cost, dict):
        raise _Invalid(f'{where}: "cost" must be an object')
    out: list[tuple[str, float]] = []
    for key in _COST_KEYS:
        value = cost.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid(f'{where}: "cost.{key}" must be a number')
        out.append((key, float(value)))
    return tuple(out)
