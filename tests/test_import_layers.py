"""The layers lean only one way, and no modules import each other in a circle.

The import graph is read from the source with ``ast``, so nothing is executed. Every import counts:
at module level, inside functions (the lazy imports that keep start-up fast), and under
``if TYPE_CHECKING:``. A lazy import still says "this module needs that one", so it may break a
layer rule or close a circle as much as a top-level one. An edge goes to the module named: ``from
pi_compact.a import b`` is an edge to ``pi_compact.a.b`` when that is a module, else to
``pi_compact.a`` (a package's ``__init__`` importing its own modules is not a circle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

import pi_compact

PACKAGE = Path(pi_compact.__file__).resolve().parent

# (importing layer, layers it must not import, why). A layer is a module or a package, by dotted name.
UPPER = ("pi_compact.cli", "pi_compact.ui")
RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pi_compact.session", ("pi_compact.compaction", "pi_compact.agent", "pi_compact.llm", *UPPER),
     "session storage and context building are below compaction: pass a digest function in"),
    ("pi_compact.compaction", ("pi_compact.agent", "pi_compact.session.store", "pi_compact.llm.litellm_model",
                               "pi_compact.llm.resolve", *UPPER),
     "compaction is pure: the model and the entries come in as parameters"),
    ("pi_compact.agent", UPPER, "the agent reports through events; it never draws or wires itself"),
    ("pi_compact.ui", ("pi_compact.cli", "pi_compact.llm.resolve", "pi_compact.llm.litellm_model"),
     "the UI gets a runtime factory from cli.wiring instead of building runtimes and models itself"),
    ("pi_compact.llm", ("pi_compact.agent", "pi_compact.compaction", "pi_compact.session", *UPPER),
     "the model layer knows messages and settings, nothing above them"),
    ("pi_compact.settings", ("pi_compact.agent", "pi_compact.compaction", "pi_compact.session", "pi_compact.llm",
                             *UPPER),
     "settings are plain values read by every layer"),
)

@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


def module_names(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name, for its ``__init__``)."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` lives in (itself, or the nearest enclosing package), if it is ours."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in modules else None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """Every import of a module inside ``modules``, wherever it is written in the file."""
    root = next(iter(modules)).split(".")[0]
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, path.name == "__init__.py")
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            owner = _owner(target, modules) if target.split(".")[0] == root else None
            if owner is not None and owner != module:
                edges.append(Edge(module, owner, node.lineno))
    return edges


def import_graph(package: Path) -> list[Edge]:
    modules = module_names(package)
    return [edge for name, path in modules.items() for edge in imports_of(name, path, modules)]


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def violations(edges: Iterable[Edge], rules: Iterable[tuple[str, tuple[str, ...], str]] = RULES) -> set[Edge]:
    found: set[Edge] = set()
    for edge in edges:
        for layer, forbidden, _why in rules:
            if _within(edge.source, layer) and any(_within(edge.target, other) for other in forbidden):
                found.add(edge)
    return found


def circles(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _described(found: Iterable[Edge]) -> list[str]:
    return sorted(f"{e.source} imports {e.target} (line {e.line})" for e in found)


def test_no_layer_leans_on_a_layer_above_it() -> None:
    assert _described(violations(import_graph(PACKAGE))) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(import_graph(PACKAGE)) == []


# ---- the checker itself ----------------------------------------------------------------------------


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A package ``toy`` with a low layer ``base`` and a high layer ``top``."""
    files = {
        "__init__.py": "",
        "base/__init__.py": "from toy.base import low\n",
        "base/low.py": "def f():\n    from toy.top.high import g  # lazy, and against the rule\n",
        "top/__init__.py": "",
        "top/high.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..base import low\n",
        "top/ring_a.py": "import toy.top.ring_b\n",
        "top/ring_b.py": "from toy.top import ring_a\n",
    }
    for name, text in files.items():
        (tmp_path / "toy" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "toy" / name).write_text(text)
    return tmp_path / "toy"


def test_the_checker_sees_lazy_and_type_checking_imports_against_the_rules(toy: Path) -> None:
    found = violations(import_graph(toy), [("toy.base", ("toy.top",), "low must not know high")])
    assert _described(found) == ["toy.base.low imports toy.top.high (line 2)"]


def test_the_checker_finds_circles_but_not_a_package_importing_its_own_modules(toy: Path) -> None:
    assert circles(import_graph(toy)) == [
        ["toy.base.low", "toy.top.high"],
        ["toy.top.ring_a", "toy.top.ring_b"],
    ]


# ---- two more house rules, checked the same way ----------------------------------------------------

MAX_MODULE_LINES = 400


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in module_names(PACKAGE).items()}
    assert {name: size for name, size in sizes.items() if size > MAX_MODULE_LINES} == {}


def test_the_wall_clock_is_read_by_one_helper() -> None:
    """``clock.now_ms`` is the one place that turns ``time.time()`` into a timestamp."""
    found = []
    for name, path in module_names(PACKAGE).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("now_ms", "_now_ms"):
                found.append(f"{name} defines {node.name}")
            if isinstance(node, ast.Attribute) and ast.unparse(node) == "time.time":
                found.append(f"{name} reads time.time")
    assert sorted(found) == ["pi_compact.clock defines now_ms", "pi_compact.clock reads time.time"]


# ---- the shell (cli/) and the ground floor (the package root) ---------------------------------------


def _external_imports(path: Path) -> set[str]:
    """The top-level names of every library ``path`` imports, wherever the import is written."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_cli_imports_typer() -> None:
    found = [name for name, path in module_names(PACKAGE).items()
             if not _within(name, "pi_compact.cli") and "typer" in _external_imports(path)]
    assert found == []


# The root holds values every layer may read; it imports other root modules and, of the layers, only the
# model seam's value types (``llm.protocol``): no agent, UI, shell, storage, compaction or adapter.
ROOT_MAY_IMPORT = ("pi_compact.llm.protocol",)


def test_the_root_modules_import_no_layer() -> None:
    modules = module_names(PACKAGE)
    root = {name for name, path in modules.items() if path.parent == PACKAGE and path.name not in
            ("__init__.py", "__main__.py")}
    found = [f"{edge.source} imports {edge.target} (line {edge.line})" for name in sorted(root)
             for edge in imports_of(name, modules[name], modules)
             if edge.target not in root and edge.target not in ROOT_MAY_IMPORT and edge.target != "pi_compact"]
    assert found == []


def test_the_root_keeps_only_value_modules() -> None:
    shell = {"app", "cli", "cli_flags", "cli_input", "settings_files", "settings_report"}
    assert sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem in shell) == []
    assert not (PACKAGE / "commands").exists()
