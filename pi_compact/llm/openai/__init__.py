"""The direct OpenAI-compatible client: ``client.OpenAICompatModel`` and the pieces only it uses."""
