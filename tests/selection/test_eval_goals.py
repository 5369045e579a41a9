"""The labelled cases of issue 13 and how ``bench/selection_eval.py`` judges them against the goals."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

from selection.index.op_index import TestOpIndex
from selection.pipeline import Selector
from tests.selection.conftest import item

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("selection_eval", ROOT / "bench" / "selection_eval.py")
selection_eval = importlib.util.module_from_spec(spec)
spec.loader.exec_module(selection_eval)


def test_at_least_60_cases_covering_the_change_shapes_of_issue_13():
    cases = selection_eval.load_cases([ROOT / "bench" / "cases"])
    assert len(cases) >= 60
    kinds = Counter(c.get("kind") for c in cases)
    for kind in ("push", "module", "functional", "native-module", "machinery", "variant"):
        assert kinds[kind] >= 3, kind
    pushes = [c for c in cases if c.get("kind") == "push"]
    assert all(f.patch is None and f.symbols is None for c in pushes for f in c["changeset"].files)
    files = {f.filename for c in cases for f in c["changeset"].files}
    for path in ("torch/nn/modules/linear.py", "torch/nn/modules/normalization.py", "torch/nn/functional.py",
                 "aten/src/ATen/native/Embedding.cpp", "aten/src/ATen/native/layer_norm.cpp",
                 "aten/src/ATen/TensorIterator.cpp", "torch/_prims_common/__init__.py"):
        assert path in files, path
    assert any(f.startswith("c10/core/") for f in files)


def _variant_universe():
    universe = [item("div", variant="no_rounding_mode"), item("div", variant="floor_rounding"),
                item("add"), item("Linear", module="nn.Linear")]
    index = TestOpIndex({universe[0].id: ["aten::div"], universe[1].id: ["aten::div"],
                         universe[2].id: ["aten::add"],
                         universe[3].id: ["aten::addmm", "aten::t"]})  # the module's capture
    return universe, index


def _case(name, files, must):
    from selection.models import ChangeSet

    return {"name": name, "changeset": ChangeSet(base="a", head="b", files=files), "must_select": must,
            "failures": must[:1]}


def test_labels_name_variants_and_modules_exactly():
    universe, index = _variant_universe()
    sel = Selector(universe, index=index, generators={}, source_map=False)
    header = [{"filename": "torch/include/ATen/ops/div_native.h"}]
    cases = [_case("div", header, ["div", "div.floor_rounding", "nn.Linear"])]
    row = selection_eval.evaluate(sel, cases, {}, repeat=1)["rows"][0]
    # both div variants are selected (aten::div); the module is not reached by a div header
    assert row["missed"] == ["nn.Linear"] and row["recall"] == 2 / 3
    assert selection_eval.goal_failures(row) == ["recall 67% (missed nn.Linear)",
                                                 "single-file share 50.0% > 10%"]


def test_a_case_within_the_goals_has_no_failure_and_real_share_counts_real_items():
    universe, index = _variant_universe()
    sel = Selector(universe, index=index, generators={}, source_map=False)
    cases = [_case("add", [{"filename": "torch/include/ATen/ops/add_native.h"}], ["add"])]
    out = selection_eval.evaluate(sel, cases, {}, repeat=1, real={universe[2].id})
    row = out["rows"][0]
    assert row["recalled"] and row["share"] == 0.25 and row["real_share"] == 1.0
    assert out["median_share"] == 0.25 and out["median_real_share"] == 1.0
    assert selection_eval.goal_failures({**row, "real_share": 0.05}) == []
