"""Architecture guard: the pure core stays pure and the CLI starts without the heavy libraries.

The import check runs in a fresh interpreter, because this test process may already hold litellm
or rich from other tests. The source check parses the core modules instead of running them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pi_compact

PACKAGE = Path(pi_compact.__file__).resolve().parent
HEAVY = ("litellm", "rich", "prompt_toolkit", "typer", "httpx", "requests")
CORE_MODULES = ("pi_compact.compaction", "pi_compact.session.context", "pi_compact.messages")


def _loaded_after_import(*modules: str) -> set[str]:
    """Which of HEAVY are in sys.modules after importing ``modules`` in a fresh interpreter."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(modules)!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_core_imports_no_heavy_library() -> None:
    assert _loaded_after_import(*CORE_MODULES) == set()


def test_cli_import_loads_no_heavy_library() -> None:
    # typer too is only imported when the full command parser is built (cli.typer_app.build_app).
    loaded = _loaded_after_import(*CORE_MODULES, "pi_compact.cli.entry")
    assert loaded & {"litellm", "rich", "prompt_toolkit", "typer"} == set()


def _core_files() -> list[Path]:
    files = sorted((PACKAGE / "compaction").glob("*.py"))
    return [*files, PACKAGE / "session" / "context.py", PACKAGE / "messages.py"]


_FILE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes"}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        line = getattr(node, "lineno", 0)
        found += [f"line {line}: imports {n}" for n in names if n.split(".")[0] in HEAVY]
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in _FILE_CALLS:
                found.append(f"line {node.lineno}: calls {name}(")
    return found


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_has_no_heavy_import_and_no_file_io(path: Path) -> None:
    assert _violations(path) == []


def test_violation_finder_sees_imports_and_open_calls(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import rich.console\nfrom litellm import x\nopen('f')\nPath('p').read_text()\n")
    assert _violations(bad) == [
        "line 1: imports rich.console",
        "line 2: imports litellm",
        "line 3: calls open(",
        "line 4: calls read_text(",
    ]
