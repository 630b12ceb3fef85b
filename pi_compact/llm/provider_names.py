"""pi's name for a litellm provider, as recorded in session files (pure).

Assistant messages and ``model_change`` entries name the model as pi does: its provider and its id
within that provider. pi looks the pair up in its own model registry when it resumes a session, so a
provider litellm spells differently (``gemini`` is pi's ``google``) would leave pi unable to restore
the model. Providers missing from the table are spelled the same by both (``openai``, ``anthropic``,
``openrouter``, ``xai``, ``groq``, ``mistral``...) or unknown to pi, and keep litellm's name.
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


def pi_provider(litellm_provider: str) -> str:
    """The provider name pi uses for ``litellm_provider``."""
    return _PI_NAMES.get(litellm_provider, litellm_provider)
