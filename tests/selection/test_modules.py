"""Modules linked to ops (issue 13): ModuleInfo items captured forward and backward, an impacted
op selecting the modules that run it, a module file selecting the modules it defines (by AST)
plus their functional OpInfo tests, and torch/nn/functional.py by changed function."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.attribution.rules import OpCatalog, attribute, functional_key
from selection.attribution.source_map import SourceMap
from selection.index.module_capture import capture_module_ops
from selection.index.op_index import TestOpIndex
from selection.models import ChangedFile, ChangeSet
from selection.policy.profile import SPYRE_SIM
from selection.stage import Candidate, SelectionState
from selection.stages.memory import Memory
from selection.stages.scope import Scope
from tests.selection.conftest import item

LINEAR_PY = '''\
class Identity(Module):
    pass


class Linear(Module):
    def forward(self, input):
        return F.linear(input, self.weight, self.bias)


class Bilinear(Module):
    pass


class _Private(Module):
    pass
'''
YAML = """\
- func: embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1) -> Tensor
  dispatch:
    CompositeExplicitAutograd: embedding_symint
- func: addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
  structured_delegate: addmm.out
- func: addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: addmm_out_cpu
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
"""


def test_module_capture_records_forward_and_backward_ops() -> None:
    assert capture_module_ops("nn.Embedding") == ("aten::embedding", "aten::embedding_dense_backward")
    linear = capture_module_ops("nn.Linear")
    assert {"aten::addmm", "aten::mm"} <= set(linear) and "aten::ones_like" not in linear
    assert capture_module_ops("nn.NoSuchModule") is None


def test_functional_key() -> None:
    assert functional_key("LayerNorm") == ["layer_norm"]
    assert functional_key("BatchNorm2d") == ["batch_norm2d", "batch_norm"]


@pytest.fixture
def universe():
    return [item("nn.functional.linear"), item("nn.functional.bilinear"), item("nn.functional.embedding"),
            item("addmm"), item("mul"), item("Linear", module="nn.Linear"),
            item("Bilinear", module="nn.Bilinear"), item("Embedding", module="nn.Embedding"),
            item("LayerNorm", module="nn.LayerNorm"), item("ReLU", module="nn.ReLU")]


@pytest.fixture
def parts(tmp_path: Path, universe):
    (tmp_path / "torch/nn/modules").mkdir(parents=True)
    (tmp_path / "torch/nn/modules/linear.py").write_text(LINEAR_PY)
    (tmp_path / "aten/src/ATen/native").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text(YAML)
    sm = SourceMap.from_root(tmp_path)
    ops = {"nn.functional.linear": ["aten::addmm", "aten::t"], "nn.functional.bilinear": ["aten::_trilinear"],
           "nn.functional.embedding": ["aten::embedding"], "addmm": ["aten::addmm"], "mul": ["aten::mul"],
           "nn.Linear": ["aten::addmm", "aten::mm", "aten::t"], "nn.Bilinear": ["aten::_trilinear"],
           "nn.Embedding": ["aten::embedding", "aten::embedding_dense_backward"],
           "nn.LayerNorm": ["aten::native_layer_norm"], "nn.ReLU": ["aten::relu"]}
    index = TestOpIndex({i.id: ops[i.subject] for i in universe})
    catalog = OpCatalog(aten_ops=index.aten_ops, opinfos={i.subject: i.op for i in universe if i.op},
                        source_map=sm, modules=frozenset(i.module for i in universe if i.module))
    return index, catalog


def _selected(universe, index, catalog, *files: ChangedFile) -> set[str]:
    st = SelectionState(changeset=ChangeSet(base="a", head="b", files=list(files)),
                        candidates=tuple(Candidate(i, i.mode) for i in universe), universe=len(universe))
    st = Memory(index, catalog, universe).run(Scope(SPYRE_SIM).run(st))
    return {c.item.subject for c in st.candidates}


def test_module_file_selects_its_modules_and_their_functional_tests(universe, parts) -> None:
    index, catalog = parts
    f = ChangedFile(filename="torch/nn/modules/linear.py")
    imp = attribute(f, catalog)
    assert imp.modules == {"nn.Linear", "nn.Bilinear"}  # Identity: no ModuleInfo in the universe
    assert "classes it defines: Bilinear, Identity, Linear" in imp.reasons[0]
    assert _selected(universe, index, catalog, f) == {"nn.Linear", "nn.Bilinear", "nn.functional.linear",
                                                      "nn.functional.bilinear"}
    one = ChangedFile(filename="torch/nn/modules/linear.py", symbols=["Linear.forward"])
    assert _selected(universe, index, catalog, one) == {"nn.Linear", "nn.functional.linear"}


def test_an_impacted_op_selects_the_modules_that_run_it(universe, parts) -> None:
    index, catalog = parts
    emb = ChangedFile(filename="aten/src/ATen/native/Embedding.cpp")
    assert _selected(universe, index, catalog, emb) == {"nn.Embedding", "nn.functional.embedding"}
    addmm = ChangedFile(filename="aten/src/ATen/native/LinearAlgebra.cpp",
                        patch="@@ -1,2 +1,2 @@ static void addmm_impl_cpu_(\n-a\n+b\n")
    assert _selected(universe, index, catalog, addmm) == {"nn.Linear", "nn.functional.linear", "addmm"}


def test_functional_py_by_changed_function_selects_its_module(universe, parts) -> None:
    index, catalog = parts
    f = ChangedFile(filename="torch/nn/functional.py", symbols=["layer_norm"])
    assert "nn.LayerNorm" in _selected(universe, index, catalog, f)
    assert "nn.ReLU" not in _selected(universe, index, catalog, f)


def test_a_whole_shared_file_without_a_patch_selects_its_own_ops_and_modules_only(tmp_path: Path) -> None:
    universe = [item("add"), item("cov"), item("mm"), item("sum"), item("GRU", module="nn.GRU")]
    ops = {"add": ["aten::add"], "cov": ["aten::add", "aten::mean"], "mm": ["aten::mm"],
           "sum": ["aten::sum"], "nn.GRU": ["aten::add", "aten::mm"]}
    index = TestOpIndex({i.id: ops[i.subject] for i in universe})
    (tmp_path / "aten/src/ATen/native").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text(YAML)
    catalog = OpCatalog(aten_ops=index.aten_ops, opinfos={i.subject: i.op for i in universe if i.op},
                        source_map=SourceMap.from_root(tmp_path), modules=frozenset({"nn.GRU"}))
    whole = ChangedFile(filename="aten/src/ATen/native/BinaryOps.cpp")  # the table: add, sub, mul, …
    assert _selected(universe, index, catalog, whole) == {"add", "nn.GRU"}  # not cov: it adds inside
    stub = ChangedFile(filename="aten/src/ATen/native/BinaryOps.cpp",
                       patch="@@ -5,2 +5,2 @@\n-DEFINE_DISPATCH(add_stub);\n+DEFINE_DISPATCH(add_stub) ;\n")
    assert _selected(universe, index, catalog, stub) == {"add", "cov", "nn.GRU"}  # the kernel: every caller
