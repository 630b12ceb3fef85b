"""Compaction orchestration: when to compact (``triggers``), the words per reason (``reasons``), the
pipeline, summaries made ahead, the summarizer choice, the loop guard, tree moves and the live context.

Kept empty so importing one module (``reasons`` from the UI) stays cheap.
"""

from __future__ import annotations
