"""Native kernels from data (issue 13): kernel names of the installed torch's
native_functions.yaml and derivatives.yaml, C++ hunk names → kernels → ops, the file-stem rule,
kernels a file defines at a commit of an upstream checkout, and canaries for what none attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.attribution.native import KernelNames, NativeDefinitions, camel_words, patch_names
from selection.attribution.rules import OpCatalog, attribute
from selection.attribution.source_map import SourceMap, installed_root, parse_derivatives
from selection.models import ChangedFile

NATIVE = "aten/src/ATen/native/"


@pytest.fixture(scope="module")
def real_map(tmp_path_factory) -> SourceMap:
    found = installed_root()
    assert found is not None, "torch is a dependency of the project"
    return SourceMap.build(found[0], version=found[1], cache_dir=tmp_path_factory.mktemp("sm"))


@pytest.fixture(scope="module")
def names(real_map) -> KernelNames:
    return KernelNames(real_map.kernels, real_map.backward)


@pytest.fixture(scope="module")
def catalog(real_map) -> OpCatalog:
    return OpCatalog(aten_ops=real_map.ops, opinfos={"softmax": "softmax", "log_softmax": "log_softmax",
                                                      "div.no_rounding_mode": "div", "div.trunc_rounding": "div",
                                                      "index_select": "index_select", "flip": "flip"},
                     source_map=real_map)


def test_kernel_names_of_the_issue_resolve_from_the_installed_yaml(names) -> None:
    assert names.resolve("softmax_cpu_out") == {"aten::_softmax"}  # CPU: softmax_cpu_out
    assert "aten::addmm" in names.resolve("addmm_impl_cpu_")  # helper named after its op
    assert "aten::add" in names.resolve("add_out")  # TORCH_IMPL_FUNC(add_out) of structured add.out
    assert "aten::add" in names.resolve("add_stub")  # DEFINE_DISPATCH(add_stub)
    assert names.resolve("index_put_with_sort_stub") == {"aten::index_put"}  # longest run wins
    assert "aten::_softmax" in names.resolve("softmax_lastdim_kernel_impl")
    assert names.resolve("cpu") == names.resolve("impl") == names.resolve("stub") == set()
    # derivatives.yaml: the backward kernel's op reaches the forward op whose formula calls it
    assert "aten::_softmax" in names.with_forward({"aten::_softmax_backward_data"})
    assert "aten::embedding" in names.with_forward(names.resolve("embedding_backward_cpu_kernel"))


def test_parse_derivatives_keeps_backward_ops_only() -> None:
    text = ("- name: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor\n"
            "  self: _softmax_backward_data(grad, result, dim, self.scalar_type())\n"
            "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n"
            "  self: mul_tensor_backward(grad, other, self.scalar_type()).sum()\n")
    known = {"aten::_softmax", "aten::_softmax_backward_data", "aten::sum", "aten::mul"}
    assert parse_derivatives(text, known) == {"aten::_softmax_backward_data": ["aten::_softmax"]}
    with pytest.raises(ValueError, match="not YAML"):
        parse_derivatives("- name: [", known)


def test_patch_names_reads_hunk_headers_definitions_and_stubs() -> None:
    patch = ("@@ -10,6 +10,6 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n   int64_t d = 0;\n-  a;\n+  b;\n"
             "@@ -80,4 +80,5 @@ namespace at::native {\n"
             " static void host_helper(const Tensor& t) {\n-  x;\n+  y;\n }\n"
             "+DEFINE_DISPATCH(softmax_lastdim_kernel);\n"
             "+REGISTER_DISPATCH(add_stub, &add_kernel_impl)\n"
             "@@ -200,3 +201,3 @@ Tensor& addmm_out(const Tensor& self,\n   int keep;\n")
    assert patch_names(patch) == ["softmax_cpu_out", "host_helper", "softmax_lastdim_kernel", "add_stub",
                                  "add_kernel_impl"]  # the last hunk changes no line: addmm_out not named


def test_camel_words() -> None:
    assert camel_words("TensorAdvancedIndexing") == ["tensor", "advanced", "indexing"]
    assert camel_words("AveragePool2d") == ["average", "pool2d"]
    assert camel_words("layer_norm") == ["layer", "norm"]


@pytest.mark.parametrize(("path", "must", "must_not"), [
    ("SoftMax.cpp", {"aten::_softmax", "aten::_log_softmax"}, {"aten::max", "aten::amax"}),
    ("Embedding.cpp", {"aten::embedding", "aten::embedding_dense_backward"}, {"aten::add"}),
    ("TensorAdvancedIndexing.cpp", {"aten::index_select", "aten::index_put", "aten::gather"}, {"aten::add"}),
    ("TensorTransformations.cpp", {"aten::flip", "aten::roll"}, {"aten::index"}),
    ("AveragePool2d.cpp", {"aten::avg_pool2d"}, {"aten::max_pool2d"}),
    ("layer_norm.cpp", {"aten::native_layer_norm"}, {"aten::native_batch_norm"}),
    ("UpSampleNearest2d.cpp", {"aten::upsample_nearest2d"}, {"aten::_embedding_bag"}),
    ("BinaryOps.cpp", {"aten::add", "aten::div"}, {"aten::_softmax"}),
])
def test_file_stem_rule_without_a_patch(catalog, path, must, must_not) -> None:
    imp = attribute(ChangedFile(filename=NATIVE + path), catalog)
    assert imp.attributed and not imp.canary, imp.reasons
    assert must <= imp.aten_ops and not (must_not & imp.aten_ops), sorted(imp.aten_ops)


def test_a_patch_narrows_a_file_to_the_kernels_it_touches(catalog) -> None:
    patch = "@@ -120,7 +120,7 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n-  a;\n+  b;\n"
    imp = attribute(ChangedFile(filename=NATIVE + "SoftMax.cpp", patch=patch), catalog)
    assert {a.split("::")[1].lstrip("_") for a in imp.aten_ops} == {"softmax"}, imp.aten_ops  # no log_softmax
    assert "patch: softmax_cpu_out" in imp.reasons[0]
    # a patch that names no kernel falls back to the whole file, and says so
    includes = "@@ -1,1 +1,1 @@\n-#include <a>\n+#include <b>\n"
    imp = attribute(ChangedFile(filename=NATIVE + "SoftMax.cpp", patch=includes), catalog)
    assert "aten::_log_softmax" in imp.aten_ops and "patch names no kernel" in imp.reasons[0]


def test_an_impacted_op_selects_its_opinfo_variants(catalog) -> None:
    imp = attribute(ChangedFile(filename=NATIVE + "BinaryOps.cpp"), catalog)
    assert {"div.no_rounding_mode", "div.trunc_rounding"} <= imp.opinfos


def test_a_file_nothing_attributes_is_reported_for_canaries(catalog) -> None:
    imp = attribute(ChangedFile(filename=NATIVE + "QwertyZxcv.cpp"), catalog)
    assert imp.canary and not imp.attributed and "not attributable" in imp.reasons[0]


def test_kernels_a_file_defines_at_a_commit_are_read_once_and_cached(real_map, tmp_path: Path) -> None:
    reads: list[tuple[str, str]] = []

    def read(commit: str, path: str) -> str | None:
        reads.append((commit, path))
        return "TORCH_IMPL_FUNC(softmax_cpu_out) (\n) {}\n" if path.endswith("Odd.cpp") else None

    defs = NativeDefinitions(read, tmp_path)
    catalog = OpCatalog(aten_ops=real_map.ops, opinfos={}, source_map=real_map, definitions=defs)
    imp = attribute(ChangedFile(filename=NATIVE + "Odd.cpp"), catalog, commit="abc123")
    assert "aten::_softmax" in imp.aten_ops and "aten::_log_softmax" not in imp.aten_ops
    assert "defines at abc123" in imp.reasons[0]
    again = NativeDefinitions(read, tmp_path)  # a new process: the per-commit cache answers
    assert again.ops("abc123", NATIVE + "Odd.cpp", real_map.kernels) == ["aten::_softmax"]
    assert reads == [("abc123", NATIVE + "Odd.cpp")]
    assert (tmp_path / "native_defs-abc123.json").is_file()


def test_a_changed_tensor_method_names_its_op_and_a_reflected_operator_its_base_op() -> None:
    from selection.attribution.rules import method_keys

    assert method_keys("Tensor.__rsub__") == ["rsub", "sub"] and method_keys("softmax") == []
    catalog = OpCatalog(aten_ops=frozenset({"aten::sub", "aten::rsub", "aten::add"}),
                        opinfos={"sub": "sub", "__rsub__": "__rsub__", "add": "add"})
    imp = attribute(ChangedFile(filename="torch/_tensor.py", symbols=["Tensor", "Tensor.__rsub__"]), catalog)
    assert imp.aten_ops == {"aten::sub", "aten::rsub"} and imp.opinfos == {"sub", "__rsub__"}
