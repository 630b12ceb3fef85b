"""Terminal presentation: rich rendering and prompt_toolkit input. Never imports litellm."""
