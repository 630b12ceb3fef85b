"""`python -m pi_compact` runs the CLI."""

from __future__ import annotations

from pi_compact.cli import main

if __name__ == "__main__":
    main()
