"""Which adapter serves a model: the direct OpenAI-compatible client, or litellm (pure).

OpenAI's own endpoint is served by the Responses client (``resolve.create_model`` asks the provider table,
``providers.responses_url``) unless ``environment_reason`` wants litellm.

The direct client serves ``openai/<model>`` at an api base when litellm would send a plain
chat-completions call, so both send the same thing; ``litellm_reason`` names the rule that keeps a
model on litellm (None: the direct client).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from pi_compact.llm import model_map
from pi_compact.providers import DIRECT_PREFIX, direct_key_variable

PATH_VARIABLE = "PI_COMPACT_MODEL_PATH"
_CONNECTION_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "SSL_VERIFY", "SSL_CERTIFICATE")
_REWRITTEN_NAME_PARTS = ("gpt-5", "gpt-6", "responses/")


def environment_reason(environ: Mapping[str, str]) -> str | None:
    """Why the environment wants litellm for any model our own clients could serve (None: it does not):
    ``PI_COMPACT_MODEL_PATH=litellm``, a proxy or TLS variable, an empty ``OPENAI_API_KEY`` (only litellm
    should interpret those)."""
    if environ.get(PATH_VARIABLE, "").strip().lower() == "litellm":
        return f"{PATH_VARIABLE}=litellm"
    for variable in _CONNECTION_VARIABLES:
        if environ.get(variable) or environ.get(variable.lower()):
            return f"{variable} is set"
    if environ.get(direct_key_variable()) == "":
        return f"{direct_key_variable()} is set but empty"
    return None


def litellm_reason(model: str, api_base: str | None, environ: Mapping[str, str]) -> str | None:
    """None when the direct client serves ``model``; else why litellm does.

    The direct client needs: ``PI_COMPACT_MODEL_PATH`` other than ``litellm``; an ``http(s)://`` api
    base without a query; a name that is not one of OpenAI's own models in litellm's map, nor gpt-5/6,
    nor a ``responses/`` route (litellm rewrites those requests); litellm reading its bundled map; no
    proxy or TLS variable and no empty ``OPENAI_API_KEY`` (only litellm should interpret those).
    """
    reason = environment_reason(environ)
    if reason is not None and reason.startswith(PATH_VARIABLE):
        return reason
    provider, _, name = model.partition("/")
    if provider != DIRECT_PREFIX or not name:
        return "not an openai/<model> string"
    if not api_base:
        return "no api base"
    parts = urlsplit(api_base)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return "the api base is not a plain http(s) URL"
    if any(part in name for part in _REWRITTEN_NAME_PARTS):
        return "litellm rewrites requests for this model name"
    if reason is not None:
        return reason
    if model_map.lookup(model) is None:
        return "litellm does not read its bundled model map"
    catalog = model_map.is_openai_catalog_model(name)
    if catalog is None or catalog:
        return "an OpenAI catalog model (litellm applies its request rules)"
    return None
