"""``python -m pi_compact.cli`` runs the command line."""

from __future__ import annotations

from pi_compact.cli import main

if __name__ == "__main__":
    main()
