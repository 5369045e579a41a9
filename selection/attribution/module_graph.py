"""Which ``torch.nn`` module classes are built of which (issue 13: a module change reaches the
modules that contain or subclass it).

Read by AST from ``torch/nn/modules/*.py`` (a source tree or the installed wheel), once per
version with the source map (``selection.attribution.source_map``):

* ``uses[cls]`` — the module classes ``cls`` is built of: its base classes
  (``class LazyConv2d(_LazyConvXdMixin, Conv2d)`` → ``Conv2d``) and every class of the same
  directory its body names (``self.linear1 = Linear(...)`` and ``self.norm1 = LayerNorm(...)`` in
  ``TransformerEncoderLayer``; ``NonDynamicallyQuantizableLinear`` in ``MultiheadAttention``;
  ``torch.nn.X`` attributes and string annotations such as ``encoder_layer: "TransformerEncoderLayer"``);
* ``functional[cls]`` — the ``torch.nn.functional`` functions its body calls
  (``F.multi_head_attention_forward`` in ``MultiheadAttention.forward``, ``F.softmax`` in
  ``Softmax2d``), as ``F.x`` / ``functional.x`` / ``torch.nn.functional.x``.

``dependents`` inverts ``uses`` transitively: a change to ``LayerNorm`` reaches
``TransformerEncoderLayer``, ``TransformerEncoder``, ``Transformer``.  Names are bare class
names (``Linear``); a ModuleInfo is ``nn.<name>``.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

log = logging.getLogger(__name__)

MODULES_PY = "torch/nn/modules"
FUNCTIONAL_ROOTS = {"F", "functional"}


def _functional_call(func: ast.AST) -> str | None:
    """``F.softmax`` / ``functional.softmax`` / ``torch.nn.functional.softmax`` → ``softmax``."""
    if not isinstance(func, ast.Attribute):
        return None
    value = func.value
    if isinstance(value, ast.Name) and value.id in FUNCTIONAL_ROOTS:
        return func.attr
    if isinstance(value, ast.Attribute) and value.attr == "functional":
        return func.attr
    return None


def read_classes(trees: Iterable[ast.Module]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(``uses``, ``functional``) of the module docstring over the parsed module files."""
    classes: list[ast.ClassDef] = [n for t in trees for n in t.body if isinstance(n, ast.ClassDef)]
    known = {c.name for c in classes}
    uses: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for cls in classes:
        names = {b.id if isinstance(b, ast.Name) else b.attr for b in cls.bases
                 if isinstance(b, (ast.Name, ast.Attribute))}
        for node in ast.walk(cls):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)) \
                    and getattr(node.value, "id", getattr(node.value, "attr", "")) == "nn":
                names.add(node.attr)  # ``torch.nn.TransformerEncoderLayer``
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)  # a string annotation: ``encoder_layer: "TransformerEncoderLayer"``
            elif isinstance(node, ast.Call) and (fn := _functional_call(node.func)) is not None:
                calls.setdefault(cls.name, set()).add(fn)
        found = (names & known) - {cls.name}
        if found:
            uses.setdefault(cls.name, set()).update(found)
    return ({k: sorted(v) for k, v in uses.items()}, {k: sorted(v) for k, v in calls.items()})


def module_graph(root: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``read_classes`` over ``root/torch/nn/modules/*.py``; a file that does not parse is
    skipped with a warning; ``({}, {})`` when the directory is absent."""
    trees = []
    for path in sorted((Path(root) / MODULES_PY).glob("*.py")):
        try:
            trees.append(ast.parse(path.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            log.warning("module graph: skipping %s: %s", path, exc)
    return read_classes(trees)


def dependents(changed: Iterable[str], uses: Mapping[str, Iterable[str]]) -> set[str]:
    """Every class built of one of ``changed`` directly or through others (not ``changed``
    itself unless a cycle leads back to it)."""
    users: dict[str, set[str]] = {}
    for cls, used in uses.items():
        for u in used:
            users.setdefault(u, set()).add(cls)
    out: set[str] = set()
    todo = list(changed)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in out:
                out.add(user)
                todo.append(user)
    return out


def callers(function: str, functional: Mapping[str, Iterable[str]]) -> set[str]:
    """The classes whose body calls ``torch.nn.functional.<function>``."""
    return {cls for cls, fns in functional.items() if function in fns}
