"""Plain ``pytest`` works as well as ``python -m pytest`` (issue 44, item 7): ``pytest --collect-only``
failed because one test module imported ``tests.builders``, a package path only ``python -m`` (which puts
the checkout on ``sys.path``) can find; the test helpers are imported as the other modules do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTEST = Path(sys.executable).with_name("pytest")


@pytest.mark.skipif(not PYTEST.exists(), reason="no pytest script beside this interpreter")
def test_plain_pytest_collects_the_compaction_tests() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(PYTEST), "--collect-only", "-q", "-p", "no:cacheprovider", "tests/compaction"],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "error" not in done.stdout.lower().splitlines()[-1]

