"""``bench/op_recall.py``'s per-op change (issue 28): the kernel hunk it makes for a traced op is
attributed by selection to that op — else the bench would measure its own change, not recall."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from selection.attribution.rules import OpCatalog, attribute
from selection.attribution.source_map import SourceMap, installed_root, parse_native_functions

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("op_recall", ROOT / "bench" / "op_recall.py")
op_recall = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(op_recall)


@pytest.mark.parametrize("op", ["aten::mm", "aten::_softmax", "aten::cat", "aten::add", "aten::view"])
def test_the_kernel_change_of_an_op_is_attributed_to_it(op: str) -> None:
    found = installed_root()
    if found is None:
        pytest.skip("torch is not installed")
    yaml_path = found[0] / "torchgen/packaged/ATen/native/native_functions.yaml"
    sm = SourceMap(kernels=parse_native_functions(yaml_path.read_text(encoding="utf-8")))
    change = op_recall.kernel_change(op, sm)
    (f,) = change.files
    assert f.filename.startswith("aten/src/ATen/native/") and f.patch
    impact = attribute(f, OpCatalog(aten_ops=frozenset({op}), opinfos={}, source_map=sm))
    assert op in impact.aten_ops, impact.reasons
