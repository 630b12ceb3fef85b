"""Command implementations behind the CLI: each wires settings, store, model and output for one job."""
