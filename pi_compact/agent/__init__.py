"""The agent layer: the tool loop, the session orchestrator and the built-in tools.

Kept empty on purpose so ``import pi_compact.agent.tools`` stays cheap (no litellm, no rich).
"""

from __future__ import annotations
