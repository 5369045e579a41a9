"""The house rules of the code base, checked on the source (every import, also inside functions).

* no import cycles between modules of ``relay``, ``selection``, ``test_specs``, ``spyre_backend``;
* dependencies point one way (``LAYERS``, top first): a module imports only from its own layer
  or lower ones — a lower layer receives what it needs as arguments;
* no module over 400 lines; no function over 80 lines outside migrations and tests, except
  those in ``LONG_FUNCTIONS`` (each with its reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("relay", "selection", "test_specs", "spyre_backend")

#: Top first.  Longest prefix wins; a module may import from its own layer and every layer below.
LAYERS: list[tuple[str, ...]] = [
    ("relay", "relay.cli", "relay.service"),  # composition roots and the package facade
    ("relay.execution",),  # chooses in-process or Celery execution
    ("relay.worker",),  # delivery processing, task queues, Celery tasks
    ("relay.pipeline",),  # one change through selection, execution, verdicts, storage
    ("relay.crcr", "relay.quarantine", "relay.reporting"),
    ("relay.github", "relay.store", "relay.migrations"),
    ("relay.settings",),
    ("relay.envs",),
    ("relay.changes",),
    ("relay.domain", "relay.errors", "relay.retrying", "relay.logs"),
    # selection: the orchestrator, the four stages, the heuristics stage 3 asks, the shared
    # policies (areas, profile, canaries, upgrade mode), attribution, the index, the values
    ("selection", "selection.pipeline"),
    ("selection.stages",),
    ("selection.heuristics",),
    ("selection.policy",),
    ("selection.attribution",),
    ("selection.index",),
    ("selection.models", "selection.stage"),
    # test_specs: the pytest plugin, spec authoring tools, running items, expanding specs into
    # items, source-tree mode, pytest's reports, templates, the format, the values
    ("test_specs", "test_specs.plugin"),
    ("test_specs.authoring",),
    ("test_specs.run",),
    ("test_specs.expand",),
    ("test_specs.upstream",),
    ("test_specs.reports",),
    ("test_specs.templates",),
    ("test_specs.format",),
    ("test_specs.values",),
    ("spyre_backend",),
]

#: Functions allowed over 80 lines, with the reason (at most 3).
LONG_FUNCTIONS: dict[str, str] = {}


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    """Project modules ``module`` imports anywhere in its source (not itself, its packages or
    its own submodules)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets += [f"{base}.{a.name}" for a in node.names] + [base]
    out = set()
    for target in targets:
        found = _resolve(target)
        if found and found != module and not module.startswith(found + ".") \
                and not found.startswith(module + "."):
            out.add(found)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best is not None, f"{module} has no layer in LAYERS"
    return best


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_dependencies_point_down() -> None:
    upward = sorted(f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
                    for m, targets in GRAPH.items() for t in targets if layer_of(t) < layer_of(m))
    assert upward == []


def test_modules_are_small() -> None:
    big = [f"{p.relative_to(ROOT)}: {n} lines" for p in MODULES.values()
           if (n := p.read_text().count("\n")) > MAX_MODULE_LINES]
    assert big == []


def test_functions_are_short() -> None:
    long = []
    for module, path in MODULES.items():
        if ".migrations" in module:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{module}.{node.name}"
                if n > MAX_FUNCTION_LINES and where not in LONG_FUNCTIONS:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []
    assert len(LONG_FUNCTIONS) <= 3


@pytest.mark.parametrize("module", ["relay.domain", "relay.errors"])
def test_core_is_pure(module: str) -> None:
    """The domain and the exception tree do no I/O: no database, HTTP or web framework."""
    forbidden = ("sqlalchemy", "httpx", "fastapi", "celery", "subprocess")
    for name, path in MODULES.items():
        if name == module or name.startswith(module + "."):
            tree = ast.parse(path.read_text())
            names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert not names & set(forbidden), f"{name} imports {sorted(names & set(forbidden))}"
