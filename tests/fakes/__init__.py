"""Fake provider servers (Anthropic Messages, Gemini generateContent) for tests; stdlib only.

They answer with the providers' real wire shapes and reject what the real APIs reject, with the
APIs' own error texts, so a product test that passes against them proves the request was valid.
Findings about what litellm and pi send are in README.md next to this file.
"""
