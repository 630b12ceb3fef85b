"""The provider table: every per-provider fact in one row (pure, no other module of ours imported).

A row is keyed by litellm's prefix (``gemini`` in ``gemini/gemini-2.5-pro``) and says pi's name for the
provider (``google``, recorded in session files: pi looks models up by it when it resumes a session),
pi's wire ``api`` for its replies (pi replays signed thinking only to the same provider, api and model),
whether it serves a repeated prompt prefix from its cache (so summaries are asked on the chat prefix by
default), whether litellm knows its models from the bundled table alone, whether it authenticates
without a key variable, its own endpoint's host, and the compaction its API does itself (for which
models). Every other module asks this table; none names a provider itself
(``tests/project/test_import_layers.py`` checks). Models and providers of pi's ``models.json`` come on top
of it (``custom_models.py``).

Adding an OpenAI-compatible vendor is one row here (``base_url``, ``key_variable``, ``overflow_texts``:
our own client serves it), or no code at all: an entry in ``models.json`` (with ``overflowTexts`` for its
own overflow wording) or in the ``models`` settings key.
"""

from __future__ import annotations

from dataclasses import dataclass

CHAT_COMPLETIONS = "openai-completions"  # pi's api name for every provider without a row saying otherwise
ANTHROPIC = "anthropic-messages"
GOOGLE = "google-generative-ai"
RESPONSES = "openai-responses"  # OpenAI's Responses API, which pi uses for OpenAI's own models
DIRECT_PREFIX = "openai"  # the prefix of OpenAI-compatible servers, which our own client can serve
# The provider's own compaction, by mechanism (``llm/server_compaction.py`` speaks each on the wire).
ANTHROPIC_COMPACTION = "anthropic-compact-20260112"  # the ``compact_20260112`` context-management edit
OPENAI_COMPACTION = "openai-responses-compact"  # ``POST /responses/compact`` on the Responses API


@dataclass(frozen=True)
class Provider:
    """What pi-compact knows about one provider."""

    prefix: str  # litellm's name
    pi_name: str = ""  # pi's name ("" : the same as litellm's)
    api: str = CHAT_COMPLETIONS
    caches_prefix: bool = False  # a request starting like the last one is read from its prompt cache
    simple_map: bool = False  # litellm takes its models' facts from the bundled table alone
    ambient_auth: bool = False  # authenticates without an API key variable (cloud credentials, local server)
    hosts: tuple[str, ...] = ()  # parts of its servers' URLs: a base URL holding one is this provider's
    cache_key: bool = False  # its own endpoint takes ``prompt_cache_key`` (pi sends it only there)
    key_variable: str | None = None  # the environment variable its key is read from, where we read it ourselves
    # pi's chat-completions rules (``detectCompat``): a server that takes the ``developer`` role (for a
    # reasoning model's system prompt) and ``reasoning_effort``.
    developer_role: bool = True
    reasoning_effort: bool = True
    rules_by_name: bool = True  # pi applies those rules to the provider's name too, not only to its hosts
    # The api pi 0.73.1 ships for this provider (that of its first model), where pi has it built in: a custom
    # model of the provider in ``models.json`` takes it, and needs neither ``baseUrl`` nor ``apiKey``.
    pi_builtin_api: str | None = None
    # Its own endpoint speaks OpenAI's Responses API there (pi sends its models that way): requests with no
    # base URL of the user's, or one of its ``hosts``, or its ``models.json`` ``baseUrl``, go to this URL's
    # ``/responses``; a base URL of the user's elsewhere (a local server) keeps chat completions.
    responses_url: str | None = None
    # An OpenAI-compatible vendor litellm does not know: its endpoint (served by our own client, with the key
    # from ``key_variable``) and the words its overflow errors use that ``llm.overflow`` does not know.
    base_url: str | None = None
    overflow_texts: tuple[str, ...] = ()
    # Its API's own compaction (one of the mechanisms above), for every model it serves, or with
    # ``compaction_by_model`` only for those litellm's model map marks (``supports_anthropic_compaction``);
    # a ``models.json`` model says it with ``serverCompaction``.
    server_compaction: str | None = None
    compaction_by_model: bool = False

    @property
    def name(self) -> str:
        """pi's name for the provider."""
        return self.pi_name or self.prefix


def _simple(*prefixes: str) -> tuple[Provider, ...]:
    return tuple(Provider(prefix, simple_map=True) for prefix in prefixes)


ROWS: tuple[Provider, ...] = (
    Provider("openai", simple_map=True, hosts=("api.openai.com",), cache_key=True, key_variable="OPENAI_API_KEY",
             pi_builtin_api=RESPONSES, responses_url="https://api.openai.com/v1", server_compaction=OPENAI_COMPACTION),
    Provider("anthropic", api=ANTHROPIC, caches_prefix=True, simple_map=True, pi_builtin_api=ANTHROPIC,
             server_compaction=ANTHROPIC_COMPACTION, compaction_by_model=True),
    Provider("gemini", "google", api=GOOGLE, caches_prefix=True, simple_map=True, pi_builtin_api=GOOGLE),
    Provider("vertex_ai", "google-vertex", api="google-vertex", caches_prefix=True, ambient_auth=True,
             pi_builtin_api="google-vertex"),
    Provider("vertex_ai_beta", "google-vertex", api="google-vertex", caches_prefix=True, ambient_auth=True),
    Provider("deepseek", caches_prefix=True, simple_map=True, hosts=("deepseek.com",), developer_role=False,
             rules_by_name=False, pi_builtin_api=CHAT_COMPLETIONS),
    Provider("moonshot", "moonshotai", simple_map=True, hosts=("api.moonshot.",), developer_role=False,
             reasoning_effort=False, pi_builtin_api=CHAT_COMPLETIONS),
    Provider("moonshotai-cn", hosts=("api.moonshot.",), developer_role=False, reasoning_effort=False,
             pi_builtin_api=CHAT_COMPLETIONS),
    Provider("xai", simple_map=True, hosts=("api.x.ai",), developer_role=False, reasoning_effort=False,
             pi_builtin_api=CHAT_COMPLETIONS),
    Provider("zai", simple_map=True, hosts=("api.z.ai",), developer_role=False, reasoning_effort=False,
             pi_builtin_api=CHAT_COMPLETIONS),
    Provider("cerebras", simple_map=True, hosts=("cerebras.ai",), developer_role=False,
             pi_builtin_api=CHAT_COMPLETIONS),
    Provider("opencode", hosts=("opencode.ai",), developer_role=False, pi_builtin_api=CHAT_COMPLETIONS),
    Provider("opencode-go", pi_builtin_api=CHAT_COMPLETIONS),
    Provider("chutes", hosts=("chutes.ai",), developer_role=False, rules_by_name=False),
    Provider("cloudflare-workers-ai", hosts=("api.cloudflare.com",), developer_role=False,
             pi_builtin_api=CHAT_COMPLETIONS),
    Provider("cloudflare-ai-gateway", hosts=("gateway.ai.cloudflare.com",), developer_role=False,
             reasoning_effort=False, pi_builtin_api=ANTHROPIC),
    Provider("bedrock", "amazon-bedrock", ambient_auth=True, pi_builtin_api="bedrock-converse-stream"),
    Provider("sagemaker", ambient_auth=True),
    Provider("ollama", ambient_auth=True),
    Provider("ollama_chat", ambient_auth=True),
    Provider("azure", "azure-openai-responses", pi_builtin_api="azure-openai-responses"),
    Provider("fireworks_ai", "fireworks", pi_builtin_api=ANTHROPIC),
    Provider("github_copilot", "github-copilot", pi_builtin_api=ANTHROPIC),
    Provider("vercel_ai_gateway", "vercel-ai-gateway", simple_map=True, pi_builtin_api=ANTHROPIC),
    Provider("openrouter", simple_map=True, pi_builtin_api=CHAT_COMPLETIONS),
    Provider("groq", simple_map=True, pi_builtin_api=CHAT_COMPLETIONS),
    Provider("mistral", simple_map=True, pi_builtin_api="mistral-conversations"),
    Provider("minimax", simple_map=True, pi_builtin_api=ANTHROPIC),
    Provider("minimax-cn", pi_builtin_api=ANTHROPIC),
    Provider("huggingface", pi_builtin_api=CHAT_COMPLETIONS),
    Provider("kimi-coding", pi_builtin_api=ANTHROPIC),
    Provider("openai-codex", pi_builtin_api="openai-codex-responses"),
    *(Provider(name, pi_builtin_api=ANTHROPIC)
      for name in ("xiaomi", "xiaomi-token-plan-ams", "xiaomi-token-plan-cn", "xiaomi-token-plan-sgp")),
    *_simple(
        "together_ai", "deepinfra", "dashscope", "novita", "nebius", "sambanova", "hyperbolic", "perplexity",
        "lambda_ai", "nscale", "ovhcloud", "scaleway", "friendliai", "featherless_ai", "codestral", "nvidia_nim",
        "xiaomi_mimo",
    ),
)
_BY_PREFIX = {row.prefix: row for row in ROWS}
_BY_NAME: dict[str, Provider] = {}
for _row in ROWS:
    _BY_NAME.setdefault(_row.name, _row)


def by_prefix(prefix: str) -> Provider:
    """The row of litellm's ``prefix`` (an unknown one: an OpenAI-compatible provider of that name)."""
    return _BY_PREFIX.get(prefix) or Provider(prefix)


def by_name(name: str) -> Provider:
    """The row of pi's provider ``name`` (an unknown one: an OpenAI-compatible provider of that name)."""
    return _BY_NAME.get(name) or Provider(name)


def pi_provider(prefix: str) -> str:
    """pi's name for litellm's provider ``prefix``."""
    return by_prefix(prefix).name


def pi_api(name: str) -> str:
    """pi's ``api`` for a reply from provider ``name`` (pi's spelling)."""
    return by_name(name).api


def direct_key_variable() -> str:
    """The key variable of the OpenAI-compatible servers our own client talks to (``OPENAI_API_KEY``)."""
    return by_prefix(DIRECT_PREFIX).key_variable or ""


def chat_rules(name: str, base_url: str) -> tuple[bool, bool]:
    """pi's defaults for a chat-completions server of provider ``name`` at ``base_url``: (takes the
    ``developer`` role, takes ``reasoning_effort``). A known provider's name or one of its hosts in the
    URL decides; every other server is assumed to speak like OpenAI."""
    rows = [row for row in ROWS
            if (row.rules_by_name and row.name == name) or any(host in base_url for host in row.hosts)]
    return all(row.developer_role for row in rows), all(row.reasoning_effort for row in rows)


def responses_url(name: str, base_url: str | None) -> str | None:
    """Where provider ``name`` (pi's name) takes Responses API requests when the user gave ``base_url``
    (None: none of theirs): its own endpoint, or ``base_url`` when that is one of its hosts; None keeps the
    request on chat completions."""
    row = by_name(name)
    if row.responses_url is None:
        return None
    if base_url is None:
        return row.responses_url
    return base_url if any(host in base_url for host in row.hosts) else None


def prefix_for_api(api: str) -> str | None:
    """The litellm prefix that speaks pi's ``api`` (``anthropic-messages``: ``anthropic``), if one does."""
    return next((row.prefix for row in ROWS if row.api == api and row.simple_map), None)


def prefix_of(model: str) -> str:
    """The provider prefix of a model string ("" for a bare name)."""
    return model.split("/", 1)[0] if "/" in model else ""


def server_compaction(name: str, model_marked: bool | None) -> str | None:
    """The compaction provider ``name`` (pi's name) does itself for a model the map marks ``model_marked``
    (None: the map says nothing), or None."""
    row = by_name(name)
    if row.compaction_by_model and not model_marked:
        return None
    return row.server_compaction


def compaction_for_api(api: str) -> str | None:
    """The compaction a server speaking pi's ``api`` can do itself (for a ``models.json`` model marked
    ``serverCompaction``): Anthropic's edit on its Messages API, OpenAI's endpoint on the Responses API."""
    return {ANTHROPIC: ANTHROPIC_COMPACTION, RESPONSES: OPENAI_COMPACTION}.get(api)


def pi_builtin_api(name: str) -> str | None:
    """The api pi ships for its built-in provider ``name`` (pi's name); None when pi has no such provider."""
    row = _BY_NAME.get(name)
    return row.pi_builtin_api if row is not None else None


# The styles of thinking switch and of cache marks an OpenAI-compatible server may want (pi's ``compat``
# ``thinkingFormat`` and ``cacheControlFormat``): each names the provider whose request shape it copies.
THINKING_FORMATS = ("openai", "openrouter", "deepseek", "zai", "qwen", "qwen-chat-template")
CACHE_CONTROL_FORMATS = ("anthropic",)
(EFFORT_STYLE, OPENROUTER_STYLE, DEEPSEEK_STYLE, ZAI_STYLE, QWEN_STYLE, QWEN_TEMPLATE_STYLE) = THINKING_FORMATS
(ANTHROPIC_MARKS,) = CACHE_CONTROL_FORMATS

SIMPLE_MAP_PREFIXES = frozenset(row.prefix for row in ROWS if row.simple_map)
AMBIENT_AUTH_PREFIXES = frozenset(row.prefix for row in ROWS if row.ambient_auth)
