"""The ``mm_out_cpu`` case of issue 28: a kernel change in ``mm_out_cpu`` (``LinearAlgebra.cpp``)
must select every core-spec test that fails when ``aten::mm`` raises on the device.

Ground truth (``SPYRE_SIM_FAULTS=aten::mm:raise`` over ``opinfo_core.yaml``, 2026-12-06: exactly
these 6 fail, and the device trace of each holds ``aten::mm.out``).  With the index capturing only
the first 8 OpInfo samples, ``nn.functional.linear`` never showed ``aten::mm`` (sample 11 reaches
it) and selection picked 4 of the 6.  The index here is captured for real on the simulated
device; the source map is the installed ``native_functions.yaml`` (``mm_out_cpu`` → ``aten::mm``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.attribution.source_map import SourceMap, installed_root, parse_native_functions
from selection.index.op_index import TestOpIndex
from selection.models import ChangedFile, ChangeSet
from selection.pipeline import Selector
from test_specs.expand.universe import expand

CORE = Path(__file__).resolve().parents[2] / "test_specs/specs/opinfo_core.yaml"
FAILING = {f"opinfo_core::TestCommon::test_compare_cpu[{s}-{d}]"
           for s in ("mm", "matmul", "nn.functional.linear") for d in ("float16", "float32")}
OTHERS = ("add", "mul", "softmax", "sum")
PATCH = """@@ -1490,6 +1490,6 @@ TORCH_IMPL_FUNC(mm_out_cpu)(const Tensor & self, const Tensor & mat2) {
   {
-    at::NoNamesGuard guard;
+    at::NoNamesGuard guard;  // changed
   }
"""


def test_a_mm_out_cpu_change_selects_every_test_an_mm_fault_fails() -> None:
    found = installed_root()
    if found is None:
        pytest.skip("torch is not installed")
    yaml_path = found[0] / "torchgen/packaged/ATen/native/native_functions.yaml"
    items = [i for i in expand([CORE]) if i.op is not None
             and i.subject in {"mm", "matmul", "nn.functional.linear", *OTHERS}]
    assert FAILING <= {i.id for i in items}, "the core spec no longer has the 6 items of this case"
    index = TestOpIndex.build(items, device="spyre", cache_dir=None, shipped=False)  # captured here
    assert set(index.entries) == {i.id for i in items}  # every item indexed: none kept by fail soft
    sm = SourceMap(kernels=parse_native_functions(yaml_path.read_text(encoding="utf-8")))
    selector = Selector(items, index=index, generators={}, source_map=sm)
    change = ChangeSet(base="a", head="b", files=[ChangedFile(
        filename="aten/src/ATen/native/LinearAlgebra.cpp", patch=PATCH)])
    selected = {t.id for t in selector.select(change).selected}
    assert FAILING <= selected, f"missed {sorted(FAILING - selected)}"
    assert not any(f"[{o}-" in t for t in selected for o in OTHERS)  # and nothing mm does not reach
