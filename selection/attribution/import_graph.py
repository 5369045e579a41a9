"""Who imports a Python file of torch, and which of the importer's definitions use what it
imports (issue 28: a file that defines no module or op of its own is attributed through them).

Read by AST, once per version with the source map (``selection.attribution.source_map``), from
the files attribution understands (``SCANNED``: ``torch/nn``, ``torch/functional.py``, the op
stack).  ``torch/nn/modules/linear_cross_entropy.py`` holds only private helpers; ``torch/nn/functional.py``
imports two of them inside ``linear_cross_entropy`` → that function is the file's user.

Shape: ``importers[path][importer path] = [top-level symbols of the importer]`` (sorted):

* an import *inside* a top-level function or class (``from torch.nn.modules.linear_cross_entropy
  import ...`` in ``def linear_cross_entropy``) → that definition;
* a module-level import (``from .linear_cross_entropy_options import LinearCrossEntropyOptions``
  in ``loss.py``) → every top-level definition whose body names an imported binding (the class
  ``LinearCrossEntropyLoss``); a module-level import no definition uses is not recorded.

Relative imports are resolved against the importer's package; ``from pkg import mod`` counts as
an import of ``pkg/mod.py`` when that file exists.  Paths are repository-relative POSIX paths
(``torch/nn/functional.py``), the same in a source tree and in a wheel's ``site-packages``.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: Files whose importers are read: the trees whose symbols attribution can map to tests.
SCANNED = ("torch/nn", "torch/functional.py", "torch/_refs", "torch/_decomp", "torch/_prims",
           "torch/_meta_registrations.py", "torch/_tensor.py")


def _module_path(dotted: str, known: set[str]) -> str | None:
    """``torch.nn.modules.loss`` → ``torch/nn/modules/loss.py`` (or its package ``__init__.py``)
    when that file is in ``known``; else ``None``."""
    base = dotted.replace(".", "/")
    for cand in (f"{base}.py", f"{base}/__init__.py"):
        if cand in known:
            return cand
    return None


def _resolve(node: ast.ImportFrom, importer: str) -> str:
    """The absolute dotted module of ``from <module> import ...`` in ``importer`` (a path)."""
    if not node.level:
        return node.module or ""
    package = importer.removesuffix(".py").split("/")[:-1]  # a module's package; __init__'s too
    if importer.endswith("/__init__.py"):
        package = importer.split("/")[:-1]
    package = package[:len(package) - (node.level - 1)] if node.level > 1 else package
    return ".".join(package + ([node.module] if node.module else []))


def _imports(node: ast.AST, importer: str, known: set[str]) -> list[tuple[str, set[str]]]:
    """(imported file, names bound in the importer) for every import statement under ``node``."""
    out: list[tuple[str, set[str]]] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.ImportFrom):
            module = _resolve(sub, importer)
            target = _module_path(module, known)
            for alias in sub.names:
                bound = alias.asname or alias.name
                sub_mod = _module_path(f"{module}.{alias.name}", known)  # ``from pkg import mod``
                if sub_mod is not None:
                    out.append((sub_mod, {bound}))
                elif target is not None:
                    out.append((target, {bound}))
        elif isinstance(sub, ast.Import):
            for alias in sub.names:
                target = _module_path(alias.name, known)
                if target is not None:
                    out.append((target, {alias.asname or alias.name.split(".")[0]}))
    return out


def _names(node: ast.AST) -> set[str]:
    """Every bare name and attribute name under ``node``."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}


def read_importers(trees: dict[str, ast.Module], known: set[str]) -> dict[str, dict[str, list[str]]]:
    """``importers`` of the module docstring over parsed ``trees`` (path → module);
    ``known``: every Python path of the tree (import targets are resolved against it)."""
    out: dict[str, dict[str, set[str]]] = {}
    for path, tree in trees.items():
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        used = {d.name: _names(d) for d in defs}
        for node in tree.body:
            local = node in defs
            for target, bound in _imports(node, path, known):
                if target == path:
                    continue
                users = {node.name} if local else {d for d, names in used.items() if names & bound}
                if users:
                    out.setdefault(target, {}).setdefault(path, set()).update(users)
    return {t: {p: sorted(s) for p, s in by.items()} for t, by in out.items()}


def _python_files(root: Path, prefixes: Iterable[str]) -> list[Path]:
    files: list[Path] = []
    for prefix in prefixes:
        base = root / prefix
        files += [base] if base.is_file() else sorted(base.rglob("*.py")) if base.is_dir() else []
    return files


def import_graph(root: Path) -> dict[str, dict[str, list[str]]]:
    """``read_importers`` over the ``SCANNED`` files of ``root`` (a source tree or
    ``site-packages``); import targets resolve against every ``torch/**.py`` of ``root``.  A file
    that does not parse is skipped with a warning; ``{}`` when ``root`` has no ``torch/``."""
    root = Path(root)
    if not (root / "torch").is_dir():
        return {}
    known = {p.relative_to(root).as_posix() for p in (root / "torch").rglob("*.py")}
    trees: dict[str, ast.Module] = {}
    for path in _python_files(root, SCANNED):
        rel = path.relative_to(root).as_posix()
        try:
            trees[rel] = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            log.warning("import graph: skipping %s: %s", rel, exc)
    return read_importers(trees, known)
