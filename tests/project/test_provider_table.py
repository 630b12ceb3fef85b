"""Per-provider facts live in one table (``providers.py`` on the ground floor): no other module names a provider.

Read from the source with ``ast``: a string constant that is exactly a provider's name (litellm's prefix or
pi's name, from the table's own rows) may appear only in the table; pi's built-in providers, which reading
pi's ``models.json`` needs, are rows of it too. Docstrings and comments may name providers (they explain);
code may not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pi_compact
from pi_compact.providers import ROWS

PACKAGE = Path(pi_compact.__file__).resolve().parent
ALLOWED = {PACKAGE / "providers.py"}
NAMES = {row.prefix for row in ROWS} | {row.name for row in ROWS}


def docstrings(tree: ast.Module) -> set[int]:
    """ids of the constant nodes that are docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def provider_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = docstrings(tree)
    return sorted(
        (node.lineno, node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        and (node.value in NAMES or any(node.value.startswith(f"{name}/") for name in NAMES))
    )


def test_no_module_outside_the_provider_table_names_a_provider() -> None:
    found = {
        f"{path.relative_to(PACKAGE)}:{line}": value
        for path in sorted(PACKAGE.rglob("*.py")) if path not in ALLOWED
        for line, value in provider_literals(path)
    }
    assert found == {}


def test_the_checker_sees_a_provider_named_in_code(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Anthropic is fine here."""\nCACHING = {"anthropic", "other"}\nM = "gemini/x"\n')
    assert provider_literals(module) == [(2, "anthropic"), (3, "gemini/x")]
