"""The shell: argv in (``main``), a wired session out (``wiring``), an exit code back (``exits``).

The only package that imports typer. Importing it is cheap: the console script is ``cli.main:main``.
"""
