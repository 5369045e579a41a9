"""A file that defines no module or op of its own is attributed through who imports it (issue 28):
``torch/nn/modules/linear_cross_entropy.py`` (private helpers, imported inside
``torch.nn.functional.linear_cross_entropy``) reaches that function's tests and the modules calling
it, not every test of its area.  Inputs: small upstream-style files in a temporary tree; the last
test reads the installed torch."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from selection.attribution.import_graph import import_graph, read_importers
from selection.attribution.rules import OpCatalog, attribute
from selection.attribution.source_map import SourceMap, installed_root
from selection.index.op_index import TestOpIndex
from selection.models import ChangedFile, ChangeSet
from selection.policy.profile import SPYRE_SIM
from selection.stage import Candidate, SelectionState
from selection.stages.memory import Memory
from selection.stages.scope import Scope
from tests.selection.conftest import item

HELPERS_PY = '''\
def _chunked(x):
    return x


class _Ctx:
    pass
'''
FUNCTIONAL_PY = '''\
import torch
from torch.nn.modules.options import Options


def linear_cross_entropy(input, weight, target, options: Options = None):
    from torch.nn.modules.helpers import _chunked
    return _chunked(input)


def relu(input):
    return torch.relu(input)
'''
LOSS_PY = '''\
from .options import Options
from . import helpers as h


class CrossEntropyLoss(Module):
    def forward(self, input, target):
        return F.cross_entropy(input, target)


class LinearCrossEntropyLoss(Module):
    options: Options

    def forward(self, input, target):
        return F.linear_cross_entropy(input, self.weight, target)


class UsesHelpersByModule(Module):
    def forward(self, x):
        return h._chunked(x)
'''
OPTIONS_PY = '''\
class _Auto:
    pass
'''
ORPHAN_PY = "def _unused():\n    pass\n"
YAML = ("- func: relu(Tensor self) -> Tensor\n"
        "- func: cross_entropy_loss(Tensor self, Tensor target) -> Tensor\n")


def _tree(root: Path) -> Path:
    mods = root / "torch/nn/modules"
    mods.mkdir(parents=True)
    (root / "torch/nn/functional.py").write_text(FUNCTIONAL_PY)
    for name, text in {"helpers.py": HELPERS_PY, "loss.py": LOSS_PY, "options.py": OPTIONS_PY,
                       "orphan.py": ORPHAN_PY, "__init__.py": "from .options import _Auto\n"}.items():
        (mods / name).write_text(text)
    (root / "aten/src/ATen/native").mkdir(parents=True)
    (root / "aten/src/ATen/native/native_functions.yaml").write_text(YAML)
    return root


def test_importers_are_the_definitions_using_the_import(tmp_path: Path) -> None:
    graph = import_graph(_tree(tmp_path))
    assert graph["torch/nn/modules/helpers.py"] == {
        "torch/nn/functional.py": ["linear_cross_entropy"],  # a local import: its function
        "torch/nn/modules/loss.py": ["UsesHelpersByModule"]}  # ``from . import helpers as h``
    # a module-level import: only the definitions naming it (an annotation counts)
    assert graph["torch/nn/modules/options.py"] == {"torch/nn/functional.py": ["linear_cross_entropy"],
                                                    "torch/nn/modules/loss.py": ["LinearCrossEntropyLoss"]}
    assert "torch/nn/modules/orphan.py" not in graph
    # ``__init__`` imports ``_Auto`` but no definition of it uses the name
    assert all("torch/nn/modules/__init__.py" not in users for users in graph.values())


def test_relative_imports_resolve_against_the_package() -> None:
    trees = {"torch/nn/modules/a.py": ast.parse("from ..functional import f\ndef g():\n    return f()\n"),
             "torch/nn/modules/__init__.py": ast.parse("from .a import g\ndef h():\n    return g()\n")}
    known = {"torch/nn/functional.py", "torch/nn/modules/a.py", "torch/nn/modules/__init__.py"}
    assert read_importers(trees, known) == {"torch/nn/functional.py": {"torch/nn/modules/a.py": ["g"]},
                                            "torch/nn/modules/a.py": {"torch/nn/modules/__init__.py": ["h"]}}


@pytest.fixture
def setup(tmp_path: Path):
    sm = SourceMap.from_root(_tree(tmp_path))
    universe = [item("nn.functional.linear_cross_entropy"), item("nn.functional.cross_entropy"),
                item("nn.functional.relu"), item("LinearCrossEntropyLoss", module="nn.LinearCrossEntropyLoss"),
                item("CrossEntropyLoss", module="nn.CrossEntropyLoss")]
    ops = {"nn.functional.linear_cross_entropy": ["aten::mm"],
           "nn.functional.cross_entropy": ["aten::cross_entropy_loss"],
           "nn.functional.relu": ["aten::relu"], "nn.LinearCrossEntropyLoss": ["aten::mm"],
           "nn.CrossEntropyLoss": ["aten::cross_entropy_loss"]}
    index = TestOpIndex({i.id: ops[i.subject] for i in universe})
    catalog = OpCatalog(aten_ops=index.aten_ops, opinfos={i.subject: i.op for i in universe if i.op},
                        source_map=sm, modules=frozenset(i.module for i in universe if i.module))
    return universe, index, catalog


def _selected(setup, *files: ChangedFile) -> tuple[set[str], tuple[str, ...]]:
    universe, index, catalog = setup
    st = SelectionState(changeset=ChangeSet(base="a", head="b", files=list(files)),
                        candidates=tuple(Candidate(i, i.mode) for i in universe), universe=len(universe))
    st = Memory(index, catalog, universe).run(Scope(SPYRE_SIM).run(st))
    return {c.item.subject for c in st.candidates}, st.notes


def test_a_helper_file_narrows_to_what_its_importers_reach(setup) -> None:
    helpers = ChangedFile(filename="torch/nn/modules/helpers.py", symbols=["_Ctx", "_chunked"])
    imp = attribute(helpers, setup[2])
    assert imp.attributed and imp.via.startswith("torch/nn/functional.py:linear_cross_entropy")
    assert imp.opinfos == {"nn.functional.linear_cross_entropy"}
    assert imp.modules == {"nn.LinearCrossEntropyLoss"}  # the module calling F.linear_cross_entropy
    selected, notes = _selected(setup, helpers)
    assert selected == {"nn.functional.linear_cross_entropy", "nn.LinearCrossEntropyLoss"}
    assert any("defines no module or op of its own; attributed through who imports it" in n for n in notes)


def test_a_file_nobody_imports_still_fails_soft(setup) -> None:
    orphan = ChangedFile(filename="torch/nn/modules/orphan.py", symbols=["_unused"])
    assert not attribute(orphan, setup[2]).attributed
    selected, notes = _selected(setup, orphan)
    assert len(selected) == 5  # its areas keep every test, said in a note
    assert any("orphan.py: not attributable to ops" in n for n in notes)


def test_installed_linear_cross_entropy_is_imported_by_functional() -> None:
    found = installed_root()
    if found is None:
        pytest.skip("torch is not installed")
    graph = import_graph(found[0])
    assert "linear_cross_entropy" in graph["torch/nn/modules/linear_cross_entropy.py"]["torch/nn/functional.py"]
