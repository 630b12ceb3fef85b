"""pi_compact: a terminal coding agent whose core is context compaction.

Importing this package is cheap on purpose: nothing heavy (litellm above all) is imported here.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
