"""Models and providers declared in pi's ``models.json``, on top of the provider table (``providers.py``).

``custom_model(name, settings)`` finds the ``models.json`` model a model string names ("provider/id",
split at the first "/": an id may hold more, as OpenRouter's do); ``custom_info`` gives its ``ModelInfo``
(window, output cap, reasoning, prices, and how requests are worded: pi's rules for the system prompt's
role and ``reasoning_effort``, ``providers.chat_rules``, under the file's own ``compat``); ``base_url_for`` is a
built-in provider's ``baseUrl`` override and ``built_in_extras`` its ``compat`` and ``headers``; ``api_key_for``
and ``request_headers`` resolve ``apiKey`` and every header value as pi does (a variable's name, else the literal,
or ``!command``'s output: ``key_command``, the one runner, which runs it away from the project). Pure but for
those two, which may read the environment and run the user's own command.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pi_compact import providers
from pi_compact.llm.key_command import config_value
from pi_compact.llm.protocol import ModelInfo
from pi_compact.model_facts import Compat
from pi_compact.settings import Settings
from pi_compact.settings.pi_models import PiModel

# The apis pi-compact speaks to a ``models.json`` model: chat completions with its own client, and those
# of a provider litellm speaks (Anthropic's, Google's: ``providers.prefix_for_api``) through litellm.
DIRECT_API = providers.CHAT_COMPLETIONS
_ROLE_APIS = (providers.CHAT_COMPLETIONS, providers.RESPONSES)  # the apis whose system prompt is a message


def custom_model(name: str, settings: Settings) -> PiModel | None:
    """The ``models.json`` model ``name`` ("provider/id") stands for, if the file declares one."""
    provider, slash, model_id = name.partition("/")
    if not slash or not model_id:
        return None
    return settings.pi_models.model(provider, model_id)


def custom_info(
    model: PiModel, name: str, window: int | None, max_tokens: int | None, source: str, overflow_texts: tuple[str, ...]
) -> ModelInfo:
    """The ``ModelInfo`` of ``model`` (``window``/``max_tokens``: a flag's or our settings' values, which win;
    ``overflow_texts``: our settings' own, beside the file's)."""
    developer, effort = providers.chat_rules(model.provider, model.base_url or "")
    compat = model.compat
    developer = developer if compat.supports_developer_role is None else compat.supports_developer_role
    effort = effort if compat.supports_reasoning_effort is None else compat.supports_reasoning_effort
    costs = {key: value / 1_000_000 for key, value in model.cost}
    return ModelInfo(
        model=name, provider=model.provider, context_window=window or model.context_window,
        max_output_tokens=max_tokens or model.max_tokens, reasoning=model.reasoning,
        window_source=source if window else "models.json", wire_api=model.api,
        # pi's role rule is chat completions' own: Anthropic's and Google's apis have a system field.
        system_role="developer" if model.reasoning and developer and model.api in _ROLE_APIS else "system",
        reasoning_effort=effort if model.api == DIRECT_API else None, costs=costs,
        overflow_texts=(*overflow_texts, *model.overflow_texts), compat=model.compat, headers=model.headers,
        server_compaction=providers.compaction_for_api(model.api) if model.server_compaction else None,
    )


def built_in_extras(provider: str, model_id: str, settings: Settings) -> tuple[Compat, tuple[tuple[str, str], ...]]:
    """The ``compat`` and ``headers`` models.json gives a built-in model: its provider's, then its
    ``modelOverrides`` entry's over them (pi merges them so)."""
    entry = settings.pi_models.provider(provider)
    if entry is None:
        return Compat(), ()
    override = dict(entry.overrides).get(model_id)
    if override is None:
        return entry.compat, entry.headers
    return override.compat.over(entry.compat), (*entry.headers, *override.headers)


def base_url_for(provider: str, settings: Settings) -> str | None:
    """A ``models.json`` ``baseUrl`` for ``provider`` (pi's name): its requests go there instead."""
    entry = settings.pi_models.provider(provider)
    return entry.base_url if entry is not None else None


def api_key_for(model: PiModel, environ: Mapping[str, str] | None = None) -> str | None:
    """``model``'s ``apiKey`` as pi resolves it (``key_command.config_value``): ``!command``'s trimmed output,
    else a variable of that name when it is set and not empty, else the text itself."""
    if model.api_key is None:
        return None
    return config_value(model.api_key, f"the apiKey command of provider {model.provider} in models.json", environ)


def request_headers(headers: Iterable[tuple[str, str]], provider: str,
                    environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """models.json ``headers`` (``ModelInfo.headers``) with each value resolved as ``apiKey`` is (pi's rule,
    and the one command runner); a later name wins."""
    return {name: config_value(value, f'the "{name}" header command of provider {provider} in models.json',
                               environ) for name, value in headers}
