from __future__ import annotations

import pytest

from selection.attribution.rules import OpCatalog
from selection.index.op_index import TestOpIndex
from test_specs.values.items import SpecItem, make_item_id

UPSTREAM = "test/test_ops.py::TestCommon::test_compare_cpu"


def item(op: str, dtype: str = "float16", mode: str = "mandatory_success", variant: str | None = None,
         module: str | None = None, reason: str | None = None) -> SpecItem:
    subject = module or (f"{op}.{variant}" if variant else op)
    return SpecItem(id=make_item_id("core", "compare_cpu", subject, dtype), suite="core",
                    template="compare_cpu", upstream=UPSTREAM, op=None if module else op,
                    variant=variant, module=module, dtype=dtype, mode=mode, reason=reason)


@pytest.fixture
def universe() -> list[SpecItem]:
    return [item("softmax"), item("softmax", "float32"), item("add"), item("mul"),
            item("matmul"), item("index_put", mode="xfail", reason="aten::_index_put_impl_ has no kernel"),
            item("add", "float64"), item("Linear", module="nn.Linear")]


@pytest.fixture
def index(universe) -> TestOpIndex:
    ops = {"softmax": ["aten::_softmax"], "add": ["aten::add"], "mul": ["aten::mul"],
           "matmul": ["aten::mm", "aten::view"], "index_put": ["aten::index_put"],
           "nn.Linear": ["aten::addmm", "aten::mm", "aten::t"]}  # a module: forward and backward
    return TestOpIndex({i.id: ops[i.subject] for i in universe})


@pytest.fixture
def catalog(universe, index) -> OpCatalog:
    return OpCatalog(aten_ops=index.aten_ops, opinfos={i.subject: i.op for i in universe if i.op},
                     generators={"sample_inputs_softmax_variant": frozenset({"softmax"})})
