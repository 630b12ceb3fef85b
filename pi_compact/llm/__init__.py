"""The model layer: one seam (``ChatModel``, in ``protocol``) between pi_compact and language models.

Adapters stand side by side (``litellm_model``, ``openai/``, ``local/``, ``scripted``) and
``resolve`` composes them. This file stays empty so importing the package never pulls in litellm.
"""

from __future__ import annotations
