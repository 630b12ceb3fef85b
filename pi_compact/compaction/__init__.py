"""The compaction core: pure functions over session entries and messages.

No litellm, rich, prompt_toolkit, network or file I/O here; a model, when one is needed, is passed in.
"""
