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

# ---- the model layer: adapters side by side (issue 20) ----------------------------------------------
# No adapter imports another (``llm/resolve.py`` composes them), and nothing under ``llm/`` leans on a
# ``learning`` package (the learned windows live in ``llm/learned.py``).
LLM_ADAPTERS = ("pi_compact.llm.litellm_model", "pi_compact.llm.openai", "pi_compact.llm.local",
                "pi_compact.llm.scripted")
RULES += tuple(
    (adapter, tuple(other for other in LLM_ADAPTERS if other != adapter),
     "adapters stand side by side: llm/resolve.py composes them, passing what one needs of another")
    for adapter in LLM_ADAPTERS
)
RULES += (("pi_compact.llm", ("pi_compact.learning",), "the learned windows are the model layer's own (learned.py)"),)
# The one module of ours that may import each heavy third-party package (its adapter); checked below.
THIRD_PARTY_OWNERS = {
    "litellm": ("pi_compact.llm.litellm_model",),
    "openai": ("pi_compact.llm.litellm_model",),
    "httpx": ("pi_compact.llm.litellm_model",),
    "httpcore": ("pi_compact.llm.litellm_model",),
    "xllamacpp": ("pi_compact.llm.local.server",),
}


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


# ---- third-party packages have one owner each (issue 20) ---------------------------------------------


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of the absolute imports in a file, wherever they are written."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_its_adapter_imports_each_model_library() -> None:
    found = sorted(
        f"{name} imports {library}"
        for name, path in module_names(PACKAGE).items()
        for library in third_party_imports(path) & THIRD_PARTY_OWNERS.keys()
        if name not in THIRD_PARTY_OWNERS[library]
    )
    assert found == []


def test_the_adapter_rule_catches_one_adapter_importing_another(tmp_path: Path) -> None:
    files = {"pi_compact/__init__.py": "", "pi_compact/llm/__init__.py": "", "pi_compact/llm/scripted.py": "",
             "pi_compact/llm/local/__init__.py": "", "pi_compact/llm/openai/__init__.py": "",
             "pi_compact/llm/openai/client.py": "",
             "pi_compact/llm/local/model.py": "from pi_compact.llm.openai.client import X\n",
             "pi_compact/llm/litellm_model.py": "import litellm\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = violations(import_graph(tmp_path / "pi_compact"))
    assert _described(found) == ["pi_compact.llm.local.model imports pi_compact.llm.openai.client (line 1)"]


# ---- compaction and session changes have one address -----------------------------------------------

SHELL = ("pi_compact.ui", "pi_compact.cli")


def test_the_ui_and_the_cli_never_build_a_navigator() -> None:
    """Tree moves and uncompact go through ``AgentSession`` (or ``agent.session.uncompact_store``)."""
    rules = [(shell, ("pi_compact.agent.compaction.navigator",), "call AgentSession.navigate / uncompact")
             for shell in SHELL]
    assert _described(violations(import_graph(PACKAGE), rules)) == []


def _store_appends(path: Path) -> list[str]:
    """``….store.append(…)``, ``store.append_message(…)`` and the like: an append on something named a store."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr.startswith("append") and "store" in ast.unparse(node.func.value).lower():
            found.append(f"{ast.unparse(node.func)} (line {node.lineno})")
    return found


def test_the_ui_and_the_cli_never_append_to_the_store() -> None:
    """``/pin``, ``/unpin``, ``/name``, ``/tree``, ``/uncompact`` write through the session's methods."""
    found = {name: _store_appends(path) for name, path in module_names(PACKAGE).items()
             if any(_within(name, shell) for shell in SHELL)}
    assert {name: calls for name, calls in found.items() if calls} == {}


def test_the_store_append_check_sees_an_append(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(state):\n    state.session.store.append({}, 0)\n    rows.append(1)\n")
    assert _store_appends(sample) == ["state.session.store.append (line 2)"]


# The compaction core's orchestrated parts: only agent/compaction/ drives them.
ORCHESTRATED = ("pi_compact.compaction.summarize", "pi_compact.compaction.gated", "pi_compact.compaction.ahead",
                "pi_compact.compaction.branch_summary", "pi_compact.compaction.calibration",
                "pi_compact.compaction.preview")


def test_agent_holds_no_compaction_orchestration_outside_agent_compaction() -> None:
    """Outside ``agent/compaction/`` the agent may read a result type, never run a summary or a plan ahead."""
    edges = [e for e in import_graph(PACKAGE) if _within(e.source, "pi_compact.agent")
             and not _within(e.source, "pi_compact.agent.compaction") and e.target in ORCHESTRATED
             and not (e.target == "pi_compact.compaction.summarize" and e.source in _RESULT_READERS)]
    assert _described(edges) == []
    top = {name.rsplit(".", 1)[1] for name in module_names(PACKAGE)
           if name.count(".") == 2 and name.startswith("pi_compact.agent.")}
    assert top == {"approval", "churn", "compaction", "events", "extensions", "hooks", "loop", "opening", "request",
                   "session", "system_prompt", "tools"}


# CompactionResult, a value (``hooks``: an extension's answer may carry one)
_RESULT_READERS = ("pi_compact.agent.session", "pi_compact.agent.extensions", "pi_compact.agent.hooks")


# ---- inside the agent: the compaction wing sits on top of the base modules (issue 31) ---------------


def arrows_back_up(edges: Iterable[Edge], agent: str = "pi_compact.agent") -> list[str]:
    """Imports from a module of ``agent`` outside its ``compaction`` wing (``tools/`` included) into the
    wing, lazy and ``TYPE_CHECKING`` ones too; ``session``, the facade that wires the wing in, may."""
    wing, facade = f"{agent}.compaction", f"{agent}.session"
    return _described(edge for edge in edges if _within(edge.source, agent) and not _within(edge.source, wing)
                      and edge.source != facade and _within(edge.target, wing))


def test_no_arrow_back_up_inside_agent() -> None:
    assert arrows_back_up(import_graph(PACKAGE)) == []


def test_the_arrow_check_sees_lazy_and_type_checking_imports_of_the_wing(tmp_path: Path) -> None:
    files = {
        "__init__.py": "",
        "agent/__init__.py": "",
        "agent/events.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from toy.agent.compaction import wing\n"),
        "agent/session.py": "from toy.agent.compaction.wing import run  # the facade wires the wing in\n",
        "agent/tools/__init__.py": "",
        "agent/tools/read.py": "def f():\n    from ..compaction import wing  # lazy\n",
        "agent/compaction/__init__.py": "",
        "agent/compaction/wing.py": "from toy.agent.events import Start  # down: allowed\n",
    }
    for name, text in files.items():
        (tmp_path / "toy" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "toy" / name).write_text(text)
    assert arrows_back_up(import_graph(tmp_path / "toy"), "toy.agent") == [
        "toy.agent.events imports toy.agent.compaction.wing (line 3)",
        "toy.agent.tools.read imports toy.agent.compaction.wing (line 2)",
    ]


# ---- the shell (cli/) and the ground floor (the package root) ---------------------------------------


def test_only_the_cli_imports_typer() -> None:
    found = [name for name, path in module_names(PACKAGE).items()
             if not _within(name, "pi_compact.cli") and "typer" in third_party_imports(path)]
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
