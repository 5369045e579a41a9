"""The source map (native_functions.yaml, decorators, calls, native kernels) and its use."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from selection.attribution.rules import OpCatalog, attribute
from selection.attribution.source_map import (
    SourceMap,
    called_ops,
    decorated_ops,
    native_file_ops,
    parse_native_functions,
)
from selection.models import ChangedFile

YAML = """\
- func: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor
  structured_delegate: _softmax.out
  dispatch:
    MkldnnCPU: mkldnn_softmax
  tags: core

- func: _softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: softmax_cpu_out
    CUDA: softmax_cuda_out

- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True

- func: take(Tensor self, Tensor index) -> Tensor
  dispatch:
    CPU, CUDA: take
"""

DECOMP = """\
@register_decomposition([aten.take.default, aten.take.out])
@out_wrapper()
def meta_take(self, index):
    return self

@register_decomposition(aten._softmax)
def _softmax(x, dim, half_to_float):
    return x

def helper():
    return 1
"""

FUNCTIONAL = """\
def softmax(input, dim=None):
    if input.dim() == 0:
        return input
    return input.softmax(dim)

def gaussian_nll_loss(input, target):
    return torch.log(input)

gelu = _add_docstr(torch._C._nn.gelu, "doc")
"""


def test_native_functions_kernels_and_delegates():
    k = parse_native_functions(YAML)
    assert k["softmax_cpu_out"] == ["aten::_softmax"]  # _softmax delegates to _softmax.out
    assert k["add_out"] == ["aten::add"]  # implicit kernel of a structured entry
    assert k["take"] == ["aten::take"]


def test_decorators_name_ops_exactly():
    ops = decorated_ops(ast.parse(DECOMP))
    assert ops == {"meta_take": ["aten::take"], "_softmax": ["aten::_softmax"]}


def test_calls_keep_the_functions_own_op_only():
    known = {"aten::softmax", "aten::log", "aten::gelu", "aten::dim"}
    ops = called_ops(ast.parse(FUNCTIONAL), known)
    assert ops == {"softmax": ["aten::softmax"], "gelu": ["aten::gelu"]}  # not log, not dim


def test_native_file_defines_kernels():
    text = "TORCH_IMPL_FUNC(softmax_cpu_out)(const Tensor& x) {}\nTensor take(const Tensor& a) {}\n"
    assert native_file_ops(text, parse_native_functions(YAML)) == ["aten::_softmax", "aten::take"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "aten/src/ATen/native/cpu").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text(YAML)
    (tmp_path / "aten/src/ATen/native/Weird.cpp").write_text("TORCH_IMPL_FUNC(softmax_cpu_out)(){}\n")
    (tmp_path / "torch/_decomp").mkdir(parents=True)
    (tmp_path / "torch/_decomp/decompositions.py").write_text(DECOMP)
    (tmp_path / "torch/nn").mkdir(parents=True)
    (tmp_path / "torch/nn/functional.py").write_text(FUNCTIONAL)
    return tmp_path


def test_tree_build_is_cached(tree: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    sm = SourceMap.build(tree, version="t", cache_dir=cache)
    assert sm.native_files == {"aten/src/ATen/native/Weird.cpp": ["aten::_softmax"]}
    assert sm.symbol_ops("torch/_decomp/decompositions.py", "meta_take") == ["aten::take"]
    files = list(cache.glob("source_map-v*-t-*.json"))
    assert len(files) == 1 and "kernels" in json.loads(files[0].read_text())
    assert SourceMap.build(tree, version="t", cache_dir=cache) == sm


def test_no_yaml_raises(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        SourceMap.from_root(tmp_path)


def test_attribution_uses_the_source_map(tree: Path, index, catalog):
    sm = SourceMap.from_root(tree)
    cat = OpCatalog(aten_ops=frozenset(index.aten_ops | {"aten::take"}), opinfos=catalog.opinfos, source_map=sm)
    # a file whose name says nothing: the kernels it defines decide
    imp = attribute(ChangedFile(filename="aten/src/ATen/native/Weird.cpp"), cat)
    assert imp.aten_ops == {"aten::_softmax"} and "kernels defined" in imp.reasons[0]
    # a decorated function whose name is not its op's
    imp = attribute(ChangedFile(filename="torch/_decomp/decompositions.py", symbols=["meta_take"]), cat)
    assert "aten::take" in imp.aten_ops and "registers aten::take" in imp.reasons[0]


def test_wheel_fallbacks_kernel_names_and_family_table(universe, index, catalog):
    sm = SourceMap(kernels=parse_native_functions(YAML))
    cat = OpCatalog(aten_ops=index.aten_ops, opinfos=catalog.opinfos, source_map=sm)
    imp = attribute(ChangedFile(filename="aten/src/ATen/native/cpu/SoftMaxKernel.cpp"), cat)
    assert imp.aten_ops == {"aten::_softmax"}
    imp = attribute(ChangedFile(filename="aten/src/ATen/native/BinaryOps.cpp"), cat)
    assert {"aten::add", "aten::mul"} <= imp.aten_ops and "table" in imp.reasons[0]


def test_native_functions_by_torchgen_keeps_the_rest_of_a_newer_file(caplog):
    """An entry the installed torchgen rejects (a tag from a newer PyTorch) is skipped with a
    warning; the other entries still map, and text that is not YAML is a ValueError."""
    text = YAML + "\n- func: brand_new(Tensor self) -> Tensor\n  tags: tag_from_the_future\n"
    with caplog.at_level("WARNING", logger="selection.attribution.source_map"):
        k = parse_native_functions(text)
    assert "brand_new" not in k and k["softmax_cpu_out"] == ["aten::_softmax"]
    assert "rejected 1 entries" in caplog.text
    with pytest.raises(ValueError):
        parse_native_functions("- func: [unclosed")
