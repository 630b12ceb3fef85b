"""Which model to talk to, what we know about it (``ModelInfo``), and the adapter that serves it.

``resolve_model`` settles the model string and its facts by the precedences written on each function;
``create_model`` is the one place the adapters are chosen (``route``) and composed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pi_compact import providers
from pi_compact.errors import ConfigError
from pi_compact.llm import custom_models, model_map
from pi_compact.llm.model_map import ModelLookup
from pi_compact.llm.protocol import ChatModel, ModelInfo
from pi_compact.llm.route import environment_reason, litellm_reason
from pi_compact.paths import settings_path_hint
from pi_compact.settings import ModelOverride, Settings
from pi_compact.settings.pi_models import PiModel


def model_string(model: str | None, settings: Settings) -> str:
    """The litellm model string to use: the explicit one (``--model``) > settings
    ``defaultProvider``/``defaultModel`` (joined as "provider/model" unless the model already has a
    "/") > ``local`` (the embedded model) when no provider key is in the environment > a ``ConfigError``."""
    if model:
        return model
    if settings.default_model:
        if "/" in settings.default_model or not settings.default_provider:
            return settings.default_model
        return f"{settings.default_provider}/{settings.default_model}"
    from pi_compact.llm.local.model import LOCAL_MODEL, choose_by_default

    if choose_by_default(os.environ):
        return LOCAL_MODEL
    raise ConfigError(f"No model configured: pass --model (local: the embedded model) or set defaultModel in "
                      f"{settings_path_hint()}.")


def model_override(model: str, settings: Settings) -> ModelOverride | None:
    """The ``models`` entry for ``model``: by the full string, else by the name after the provider."""
    override = settings.model_override(model)
    if override is None and "/" in model:
        override = settings.model_override(model.split("/", 1)[1])
    return override


def resolve_model(
    model: str | None,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    context_window: int | None = None,
    settings: Settings,
) -> ModelInfo:
    """Everything the agent needs to know about the model it will use.

    Context window: explicit (``--context-window``) > the ``models.<name>.contextWindow`` override >
    the window learned from the provider's own overflow error (``learned``) > litellm's bundled map
    (``max_input_tokens``; not ``get_max_tokens``, the *output* limit) > a ``ConfigError`` asking for
    one; ``local`` has the window its runtime starts with (flag > settings > 16,384). Max output
    tokens: the override's ``maxTokens`` > the map > None.

    ``api_base`` and ``api_key`` do not change what is known about the model; they are accepted so
    callers can pass their whole model configuration in one place.
    """
    name = model_string(model, settings)
    override = model_override(name, settings)
    # Our settings' own overflow wordings for the model, then its provider row's.
    own_texts = (*(override.overflow_texts if override else ()),
                 *providers.by_prefix(providers.prefix_of(name)).overflow_texts)
    window, source = context_window, "flag"
    if not window and override is not None and override.context_window:
        window, source = override.context_window, "settings"
    custom = custom_models.custom_model(name, settings)
    if custom is not None:  # pi's models.json declares it: its values, under a flag's and our settings'
        return custom_models.custom_info(custom, name, window, override.max_tokens if override else None, source,
                                         own_texts)
    if name == "local":  # the embedded model: its window is the one its runtime is started with
        from pi_compact.llm.local.model import local_info

        return local_info(window, source)
    looked_up = _model_facts(name)
    # The provider the string names (else the one litellm routes a bare name to), spelled as pi does.
    provider = providers.pi_provider(providers.prefix_of(name) or looked_up.provider or providers.DIRECT_PREFIX)
    pi_override = settings.pi_models.model_override(provider, name.split("/", 1)[-1])
    if not window and pi_override is not None and pi_override.context_window:
        window, source = pi_override.context_window, "models.json"
    if not window:
        from pi_compact.llm.learned import learned_window

        window, source = learned_window(name), "learned"
    if not window:
        window, source = looked_up.context_window, "litellm"
    if not window:
        raise ConfigError(
            f"The context window of model {name} is unknown: pass --context-window or set "
            f"models.{name}.contextWindow in {settings_path_hint()}."
        )
    max_output = ((override.max_tokens if override else None) or (pi_override.max_tokens if pi_override else None)
                  or looked_up.max_output_tokens)
    reasoning = looked_up.reasoning if pi_override is None or pi_override.reasoning is None else pi_override.reasoning
    # The provider's own compaction: its row's, for this model (the map's mark, models.json's serverCompaction).
    marked = looked_up.server_compaction
    if pi_override is not None and pi_override.server_compaction is not None:
        marked = pi_override.server_compaction
    compaction = providers.server_compaction(provider, marked) if marked is not False else None
    compat, headers = custom_models.built_in_extras(provider, name.split("/", 1)[-1], settings)
    return ModelInfo(
        model=name,
        provider=provider,
        context_window=window,
        max_output_tokens=max_output,
        reasoning=reasoning,
        window_source=source,
        overflow_texts=own_texts,
        # OpenAI's reasoning models read the system prompt as a developer message (pi sends that role);
        # sent as "system", litellm turns it into a user message for the o-series.
        system_role="developer" if provider == providers.pi_provider(providers.DIRECT_PREFIX) and reasoning
        else "system",
        compat=compat, headers=headers, server_compaction=compaction,
    )


def _model_facts(name: str) -> ModelLookup:
    """What the bundled map says about ``name``: read directly (``model_map``) when that module can
    answer exactly, else through litellm (bare names, providers with special rules), which costs seconds."""
    facts = model_map.lookup(name)
    if facts is None:
        from pi_compact.llm.litellm_model import lookup_model_info  # imports litellm: keep it lazy

        return lookup_model_info(name)
    return ModelLookup(facts.context_window, facts.max_output_tokens, facts.reasoning, name.split("/", 1)[0],
                       facts.server_compaction)


def create_model(
    info: ModelInfo, *, api_base: str | None = None, api_key: str | None = None, settings: Settings,
    report: Callable[[str], None] | None = None,
) -> ChatModel:
    """The ``ChatModel`` for ``info``: explicit ``api_base`` > the ``models.<name>.apiBase`` override.

    The one place adapters are chosen and composed. Cheap: litellm itself is imported on the first
    ``stream()`` (or ``preload()``), and not at all when the direct client serves the model. ``local``
    starts the embedded model's server in the background; ``report`` hears when a request has to wait.
    """
    override = model_override(info.model, settings)
    base = api_base or (override.api_base if override else None)
    custom = custom_models.custom_model(info.model, settings)
    if custom is not None:
        return _custom_model(info, custom, base, api_key, settings)
    given = base  # the user's own base URL: elsewhere than the provider's hosts, it keeps chat completions
    base = base or custom_models.base_url_for(info.provider, settings)
    headers = custom_models.request_headers(info.headers, info.provider)  # models.json's, resolved now
    row = providers.by_prefix(providers.prefix_of(info.model))
    if row.base_url is not None:  # a vendor of the table with its own OpenAI-compatible endpoint
        return _direct_client(info, base or row.base_url, api_key or _row_key(row), settings, headers=headers)
    if info.model == "local":
        return _local_model(info, base, settings, report)
    responses = providers.responses_url(info.provider, given)
    if responses is not None and environment_reason(os.environ) is None:
        # OpenAI's endpoint, or its models.json baseUrl (pi sends its Responses requests there too).
        return _responses_model(info, base if given is None and base else responses, api_key, settings, headers)
    if base and litellm_reason(info.model, base, os.environ) is None:
        return _direct_client(info, base, api_key, settings, headers=headers)
    from pi_compact.llm.litellm_model import LiteLLMModel

    return LiteLLMModel(info, api_base=base, api_key=api_key, retry=settings.retry, headers=headers)


def _custom_model(
    info: ModelInfo, custom: PiModel, base: str | None, api_key: str | None, settings: Settings
) -> ChatModel:
    """A model of pi's ``models.json``: chat completions through the direct client at its ``baseUrl``;
    Anthropic's and Google's apis through litellm, under their prefix, so the request is theirs."""
    base = base or custom.base_url
    key = api_key or custom_models.api_key_for(custom)
    # Its headers, resolved as its key is (``!command``, a variable's name, a literal); ``authHeader`` sends
    # the key as a bearer token too (pi's rule), for a gateway that reads it there.
    headers = custom_models.request_headers(info.headers, custom.provider)
    if custom.auth_header and key:
        headers["Authorization"] = f"Bearer {key}"
    if custom.api == providers.RESPONSES:
        base = base or providers.responses_url(custom.provider, None)
        if not base:
            raise ConfigError(f"Model {info.model} in {custom_source(settings)} has no baseUrl: set one for "
                              f"provider {custom.provider}.")
        return _responses_model(info, base, key, settings, headers)
    if custom.api == custom_models.DIRECT_API:
        if not base:
            raise ConfigError(f"Model {info.model} in {custom_source(settings)} has no baseUrl: set one for "
                              f"provider {custom.provider}.")
        return _direct_client(info, base, key, settings, headers=headers)
    prefix = providers.prefix_for_api(custom.api)
    if prefix is None:
        raise ConfigError(f"Model {info.model} in {custom_source(settings)} uses the api {custom.api}, which "
                          f"pi-compact does not speak: use openai-completions, openai-responses, "
                          f"anthropic-messages or google-generative-ai.")
    from pi_compact.llm.litellm_model import LiteLLMModel

    return LiteLLMModel(replace(info, model=f"{prefix}/{custom.id}"), api_base=base, api_key=key,
                        retry=settings.retry, headers=headers)


def _row_key(row: providers.Provider) -> str | None:
    """The key of a table vendor, from its variable; never another provider's (OpenAI's would be sent to it)."""
    if row.key_variable is None:
        return None
    key = os.environ.get(row.key_variable)
    if not key:
        raise ConfigError(f"Set {row.key_variable} (the API key of provider {row.name}) or pass --api-key.")
    return key


def custom_source(settings: Settings) -> str:
    return settings.pi_models.path or "models.json"


def _responses_model(info: ModelInfo, base: str, api_key: str | None, settings: Settings,
                     headers: dict[str, str] | None = None) -> ChatModel:
    from pi_compact.llm.openai.responses import ResponsesModel

    return ResponsesModel(info, api_base=base, api_key=api_key, retry=settings.retry, headers=headers)


def _direct_client(
    info: ModelInfo, base: str, api_key: str | None, settings: Settings, *, progress: bool = False,
    headers: dict[str, str] | None = None,
) -> ChatModel:
    from pi_compact.llm.litellm_model import estimate_stream_usage  # the module is light; litellm is not
    from pi_compact.llm.openai.client import OpenAICompatModel

    # litellm's counter, for a server that reports no usage: both paths then count alike.
    return OpenAICompatModel(info, api_base=base, api_key=api_key, retry=settings.retry,
                             estimate_usage=estimate_stream_usage, prompt_progress=progress, headers=headers)


def compaction_endpoint(
    name: str, chat_model: str | None, *, api_base: str | None, api_key: str | None, settings: Settings
) -> tuple[str | None, str | None]:
    """The api base and key for compaction model ``name`` (None, None: its provider's own, from the
    environment).

    Its own ``models.<name>.apiBase`` wins. Else, when it has the chat model's provider prefix, it is
    taken to live on the same server: the chat model's api base (``--api-base``, else its ``models``
    entry) and ``--api-key``. A model of another provider never gets them: they belong to another server.
    """
    override = model_override(name, settings)
    if override is not None and override.api_base:
        return override.api_base, None
    if chat_model is None or _prefix(name) != _prefix(chat_model):
        return None, None
    chat_override = model_override(chat_model, settings)
    return api_base or (chat_override.api_base if chat_override else None), api_key


def _prefix(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


def _local_model(
    info: ModelInfo, base: str | None, settings: Settings, report: Callable[[str], None] | None
) -> ChatModel:
    if base:
        raise ConfigError("--api-base does not apply to the embedded local model: to use a server you run, pass "
                          "--model openai/<its model name> --api-base <its URL>.")
    from pi_compact.llm.local.model import LocalChatModel, model_file

    # Its server speaks the OpenAI-compatible protocol: the direct client sends the requests, asking
    # llama.cpp to report how far it has read each prompt.
    return LocalChatModel(info, connect=lambda url, key: _direct_client(info, url, key, settings, progress=True),
                          file=model_file(settings.local_model_path, Path.cwd()), report=report)
