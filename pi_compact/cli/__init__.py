"""The shell: argv in (``entry``), a wired session out (``wiring``), an exit code back (``exits``).

The only package that imports typer. ``main`` is the console script (``pi-compact``); importing the
package loads nothing else.
"""

from __future__ import annotations


def main() -> None:
    """Run ``pi-compact`` with ``sys.argv``."""
    from pi_compact.cli.entry import main as run

    run()
