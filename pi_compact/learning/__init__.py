"""What the agent learns from providers across sessions (today: their real context windows)."""
