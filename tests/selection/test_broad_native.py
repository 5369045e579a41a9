"""A whole shared native file without a patch (issue 13): its ops' own OpInfos (a cross-section
per dtype when there are many), the modules running its ops or calling an nn.functional
function of its composite ops, and every caller of an op that has no OpInfo of its own."""

from __future__ import annotations

from pathlib import Path

from selection.attribution.native_families import NATIVE_FAMILIES
from selection.attribution.rules import OpCatalog, attribute, attribute_all
from selection.attribution.source_map import SourceMap
from selection.index.op_index import TestOpIndex
from selection.models import ChangedFile, ChangeSet
from selection.policy.profile import SPYRE_SIM
from selection.stage import Candidate, SelectionState
from selection.stages.memory import BROAD_SUBJECTS, Memory
from selection.stages.scope import Scope
from test_specs.values.items import SpecItem, make_item_id

TEMPLATES = ("TestCommon::test_out", "TestCommon::test_compare_cpu")
DTYPES = ("float16", "float32")
UNARY = NATIVE_FAMILIES["unaryops"][:BROAD_SUBJECTS + 2]
FUNCTIONAL_PY = '''\
def rms_norm(input, normalized_shape, weight=None, eps=None):
    return torch.rms_norm(input, normalized_shape, weight, eps)
'''
NORMALIZATION_PY = '''\
class RMSNorm(Module):
    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)
'''
YAML = "".join(f"- func: {op}(Tensor self) -> Tensor\n" for op in UNARY + ("rms_norm", "_native_batch_norm_legit",
                                                                           "mean", "rsqrt")) + (
    "- func: expm1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n")


def _item(subject: str, template: str, dtype: str, module: bool = False) -> SpecItem:
    return SpecItem(id=make_item_id("core", template, subject, dtype), suite="core", template=template,
                    upstream=f"test/test_ops.py::{template}", op=None if module else subject,
                    module=subject if module else None, dtype=dtype)


def _setup(tmp_path: Path):
    universe = [_item(op, t, d) for op in UNARY + ("nn.functional.batch_norm",) for t in TEMPLATES for d in DTYPES]
    universe += [_item("nn.RMSNorm", "TestModule::test_forward", "float32", module=True),
                 _item("nn.Tanh", "TestModule::test_forward", "float32", module=True)]
    ops = {i.id: ([f"aten::{i.op}"] if i.op in UNARY else ["aten::_native_batch_norm_legit"]) for i in universe
           if i.op}
    ops.update({i.id: {"nn.RMSNorm": ["aten::mean", "aten::rsqrt"], "nn.Tanh": ["aten::tanh"]}[i.module]
                for i in universe if i.module})
    (tmp_path / "torch/nn/modules").mkdir(parents=True)
    (tmp_path / "torch/nn/modules/normalization.py").write_text(NORMALIZATION_PY)
    (tmp_path / "torch/nn/functional.py").write_text(FUNCTIONAL_PY)
    (tmp_path / "aten/src/ATen/native").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text(YAML)
    index = TestOpIndex(ops)
    catalog = OpCatalog(aten_ops=index.aten_ops, opinfos={i.subject: i.op for i in universe if i.op},
                        source_map=SourceMap.from_root(tmp_path),
                        modules=frozenset(i.module for i in universe if i.module))
    return universe, index, catalog


def _run(universe, index, catalog, f: ChangedFile):
    st = SelectionState(changeset=ChangeSet(base="a", head="b", files=[f]),
                        candidates=tuple(Candidate(i, i.mode) for i in universe), universe=len(universe))
    return Memory(index, catalog, universe).run(Scope(SPYRE_SIM).run(st))


def test_many_opinfos_run_one_test_per_dtype_value_checking_first(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    st = _run(universe, index, catalog, ChangedFile(filename="aten/src/ATen/native/UnaryOps.cpp"))
    ops = [c.item for c in st.candidates if c.item.op]
    assert {i.op for i in ops} == set(UNARY)  # expm1, log1p, log2 … every op of the file
    assert {(i.template, i.dtype) for i in ops} == {("TestCommon::test_compare_cpu", d) for d in DTYPES}
    assert len(ops) == len(UNARY) * len(DTYPES)
    assert "nn.Tanh" in {c.item.module for c in st.candidates}  # a module running tanh
    assert any("one test per dtype" in n for n in st.notes)


def test_few_opinfos_keep_every_test(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    patch = ChangedFile(filename="aten/src/ATen/native/UnaryOps.cpp",
                        patch="@@ -1,2 +1,2 @@\n-CREATE_UNARY_TORCH_IMPL_FUNC(expm1_out, expm1_stub)\n"
                              "+CREATE_UNARY_TORCH_IMPL_FUNC(expm1_out, expm1_stub) \n")
    st = _run(universe, index, catalog, patch)  # the patch names the kernel: no cross-section
    assert {c.item.op for c in st.candidates} == {"expm1"} and len(st.candidates) == len(TEMPLATES) * len(DTYPES)


def test_an_op_without_its_own_opinfo_keeps_its_callers(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    st = _run(universe, index, catalog, ChangedFile(filename="aten/src/ATen/native/Normalization.cpp"))
    assert {c.item.op for c in st.candidates} == {"nn.functional.batch_norm"}  # via _native_batch_norm_legit
    assert len(st.candidates) == len(TEMPLATES) * len(DTYPES)


def test_a_composite_op_reaches_the_modules_calling_its_functional_form(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    imp = attribute(ChangedFile(filename="aten/src/ATen/native/layer_norm.cpp"), catalog)
    assert imp.modules == {"nn.RMSNorm"}  # aten::rms_norm → F.rms_norm → RMSNorm.forward
    assert "modules through nn.functional nn.RMSNorm" in imp.reasons[0]


def test_a_changed_helper_also_selects_the_ops_of_its_file(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    helper = ChangedFile(filename="aten/src/ATen/native/UnaryOps.cpp",
                         patch="@@ -9,2 +9,2 @@ static void expm1_impl_helper(\n-  a;\n+  b;\n")
    imps = attribute_all([helper], catalog)
    assert [i.broad for i in imps] == [False, True]  # the helper's op exactly, then its file's ops
    assert imps[0].aten_ops == {"aten::expm1"} and "helper expm1_impl_helper changed" in imps[1].reasons[0]
    st = _run(universe, index, catalog, helper)
    assert {c.item.op for c in st.candidates if c.item.op} == set(UNARY)
    assert len([c for c in st.candidates if c.item.op == "expm1"]) == len(TEMPLATES) * len(DTYPES)  # all of its own


def test_a_whole_python_op_file_selects_the_opinfos_of_its_ops_only(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    (tmp_path / "torch/_refs").mkdir(parents=True)
    (tmp_path / "torch/_refs/__init__.py").write_text(
        "@register_decomposition(aten.expm1)\ndef expm1(a):\n    return a\n\n\n"
        "@register_decomposition(aten.rsqrt)\ndef rsqrt(a):\n    return a\n")
    catalog.source_map = SourceMap.from_root(tmp_path)
    st = _run(universe, index, catalog, ChangedFile(filename="torch/_refs/__init__.py"))
    assert {c.item.subject for c in st.candidates} == {"expm1", "rsqrt"}  # not nn.RMSNorm, which runs rsqrt
    assert not any("fail soft" in n for n in st.notes)


def test_a_whole_functional_py_also_reaches_the_modules_calling_it(tmp_path: Path) -> None:
    universe, index, catalog = _setup(tmp_path)
    imp = attribute(ChangedFile(filename="torch/nn/functional.py"), catalog)
    assert imp.broad and imp.modules == {"nn.RMSNorm"}  # RMSNorm.forward calls F.rms_norm
    assert "1 modules calling it" in imp.reasons[0]


def test_own_opinfos_that_never_reach_the_op_keep_its_callers(tmp_path: Path) -> None:
    """``norm``'s OpInfos reach ``aten::linalg_vector_norm``; ``aten::norm`` runs in
    ``pairwise_distance``: a whole ReduceOps.cpp keeps that caller."""
    universe = [_item(s, t, d) for s in ("norm", "nn.functional.pairwise_distance") for t in TEMPLATES for d in DTYPES]
    index = TestOpIndex({i.id: ["aten::linalg_vector_norm"] if i.op == "norm" else ["aten::norm"] for i in universe})
    (tmp_path / "aten/src/ATen/native").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text(
        "- func: norm(Tensor self) -> Tensor\n- func: linalg_vector_norm(Tensor self) -> Tensor\n")
    catalog = OpCatalog(aten_ops=index.aten_ops, opinfos={i.subject: i.op for i in universe},
                        source_map=SourceMap.from_root(tmp_path))
    st = _run(universe, index, catalog, ChangedFile(filename="aten/src/ATen/native/ReduceOps.cpp"))
    assert {c.item.op for c in st.candidates} == {"norm", "nn.functional.pairwise_distance"}
