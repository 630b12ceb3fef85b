"""The model layer: one seam (``ChatModel``) between pi_compact and language models.

Import the pieces from their modules (``pi_compact.llm.protocol``, ``.overflow``, ``.resolve``,
``.litellm_model``). This package file stays empty on purpose so importing it never pulls in litellm.
"""

from __future__ import annotations
