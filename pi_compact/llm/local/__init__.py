"""The embedded local model: ``model.LocalChatModel``, its in-process server, weights and template."""
