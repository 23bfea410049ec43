"""The import graph: no package imports a layer above it; no module cycle, lazy imports included.

Read from the source (``ast``), not from what a process happens to import:
every ``import``/``from ... import`` counts wherever it is written (module
level, inside a function: a lazy import is still a dependency), and so does
``importlib.import_module("<constant>")``. ``if TYPE_CHECKING:`` imports
count for the layers (a type from above is still a dependency on it) but not
for cycles (they never run).

Layers, bottom up: ``pineapple`` (the core: resource runtime, engine,
operators, CLI assembly) < ``resources`` (the built-in resource types) <
``dsl``, ``codegen`` < ``server``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pineapple", "resources", "dsl", "codegen", "server")
ALLOWED: dict[str, set[str]] = {
    "pineapple": set(),
    "resources": {"pineapple"},
    "dsl": {"pineapple"},
    "codegen": {"pineapple"},
    "server": {"pineapple", "resources"},
}
"""Which other packages each package may import (generated code included)."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _extension(name: str) -> bool:
    """``name`` is a compiled module of ours (built from a ``.c`` file beside the package)."""
    package, _, leaf = name.rpartition(".")
    return (ROOT / package.replace(".", "/") / f"{leaf}.c").is_file()


def _owner(name: str) -> str | None:
    """The module of ours that ``name`` (a module or a name in one) refers to."""
    while name and name not in MODULES:
        if _extension(name):
            return None
        name = name.rpartition(".")[0]
    return name or None


def _type_only(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(inner) for inner in ast.walk(node))
    return ids


def _targets(module: str, path: Path, node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            yield f"{source}.{alias.name}"
    elif (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("importlib.import_module", "import_module")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        yield node.args[0].value


def _edges() -> dict[str, dict[str, bool]]:
    """``module -> {imported module: only under TYPE_CHECKING}``."""
    edges: dict[str, dict[str, bool]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        typed = _type_only(tree)
        out = edges.setdefault(module, {})
        for node in ast.walk(tree):
            for target in _targets(module, path, node):
                owner = _owner(target)
                if owner is not None and owner != module:
                    out[owner] = out.get(owner, True) and id(node) in typed
    return edges


EDGES = _edges()


def test_the_graph_is_read() -> None:
    assert len(MODULES) > 100
    assert EDGES["dsl._compile"]["dsl._flow"] is False  # a runtime import
    assert EDGES["dsl._dataflow"]["dsl._flow"] is True  # under TYPE_CHECKING
    assert "pineapple.operators" not in EDGES["pineapple.builtins"]


def test_no_package_imports_a_layer_above_it() -> None:
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in EDGES.items()
        for target in targets
        if target.split(".")[0] != module.split(".")[0]
        and target.split(".")[0] not in ALLOWED[module.split(".")[0]]
    )
    assert upward == []


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, [])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_cycle_lazy_imports_included() -> None:
    runtime = {m: [t for t, typed in ts.items() if not typed] for m, ts in EDGES.items()}
    # A package's __init__ re-exports its modules: an edge into the package itself from one
    # of its own modules is a cycle too (the module must import the sibling it needs).
    assert _cycles(runtime) == []


SERVER_FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "ground",
        (
            "server._native",
            "server._atomic_file",
            "server._log_format",
            "server._build_error",
            "server._admin",
            "server._engine_extras",
            "server._parse_budget",
            "server._secret_files",
            "server._tracing",
            "server._registries",
            "server._cpu_pin",
        ),
    ),
    ("metrics", ("server.metrics",)),
    (
        "model",
        (
            "server._config_read",
            "server._config",
            "server._config_diff",
            "server._snapshot",
            "server._build",
            "server._request_sample",
            "server._replay",
            "server._value_replay",
            "server._shadow_compare",
            "server._shadow_summary",
            "server._shadow",
            "server._resource_stage",
        ),
    ),
    (
        "lifecycle",
        (
            "server._logmask",
            "server._reload_policy",
            "server._reloader",
            "server._decisions",
            "server._config_history",
            "server._kept_values",
            "server._history_decisions",
            "server._stage",
            "server._watcher",
            "server._service",
        ),
    ),
    ("http", ("server.http",)),
    ("processes", ("server.workers", "server.fleet", "server._history_pod", "server._run")),
    ("cli", ("server.cli",)),
    ("faces", ("server", "server.lowlevel")),
)
"""The server's floors, bottom up, as ``server/README.md`` draws them: a module imports
only its own floor and the ones below. A name covers the module and, for a package,
every module inside it (its ``__init__`` included)."""


def _floor(module: str) -> int:
    best: tuple[int, int] | None = None  # (length of the matching name, floor)
    for number, (_, names) in enumerate(SERVER_FLOORS):
        for name in names:
            inside = name != "server" and module.startswith(name + ".")
            if (module == name or inside) and (best is None or len(name) > best[0]):
                best = (len(name), number)
    assert best is not None, f"{module} is on no floor of SERVER_FLOORS"
    return best[1]


def test_every_server_module_has_one_floor() -> None:
    for module in MODULES:
        if module.split(".")[0] == "server":
            _floor(module)


def test_the_server_imports_only_its_floor_and_the_ones_below() -> None:
    upward = sorted(
        f"{module} ({SERVER_FLOORS[_floor(module)][0]}) imports {target}"
        f" ({SERVER_FLOORS[_floor(target)][0]})"
        for module, targets in EDGES.items()
        if module.split(".")[0] == "server"
        for target in targets
        if target.split(".")[0] == "server" and _floor(target) > _floor(module)
    )
    assert upward == []
