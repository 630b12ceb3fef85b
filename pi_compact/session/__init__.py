"""Session files (pi's JSONL v3) and the projection of a session to the model's context."""
