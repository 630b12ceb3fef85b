"""pi's names for a litellm provider and for its wire protocol, as recorded in session files (pure).

Assistant messages and ``model_change`` entries name the model as pi does: its provider and its id
within that provider. pi looks the pair up in its own model registry when it resumes a session, so a
provider litellm spells differently (``gemini`` is pi's ``google``) would leave pi unable to restore
the model. Providers missing from the table are spelled the same by both (``openai``, ``anthropic``,
``openrouter``, ``xai``, ``groq``, ``mistral``...) or unknown to pi, and keep litellm's name.

Each assistant message also names its ``api``; pi replays signed thinking only to a message of the
same provider, api and model, so Anthropic and Google replies must not claim to be OpenAI completions.
"""

from __future__ import annotations

_PI_NAMES = {
    "gemini": "google",
    "vertex_ai": "google-vertex",
    "vertex_ai_beta": "google-vertex",
    "bedrock": "amazon-bedrock",
    "azure": "azure-openai-responses",
    "fireworks_ai": "fireworks",
    "moonshot": "moonshotai",
    "github_copilot": "github-copilot",
    "vercel_ai_gateway": "vercel-ai-gateway",
}

# pi's api per provider (pi name) where it is not ``openai-completions``, the protocol we speak to
# every other provider (also to OpenAI itself, whose responses API pi would use: we do not).
_PI_APIS = {
    "anthropic": "anthropic-messages",
    "google": "google-generative-ai",
    "google-vertex": "google-vertex",
}


def pi_provider(litellm_provider: str) -> str:
    """The provider name pi uses for ``litellm_provider``."""
    return _PI_NAMES.get(litellm_provider, litellm_provider)


def pi_api(provider: str) -> str:
    """pi's ``api`` for a reply from ``provider`` (pi's spelling)."""
    return _PI_APIS.get(provider, "openai-completions")
