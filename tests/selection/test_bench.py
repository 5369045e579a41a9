"""The recall harness: its cases are valid and its figures are computed as documented."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from selection.pipeline import Selector

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("selection_eval", ROOT / "bench" / "selection_eval.py")
selection_eval = importlib.util.module_from_spec(spec)
spec.loader.exec_module(selection_eval)


def test_cases_are_valid_and_enough():
    cases = selection_eval.load_cases([ROOT / "bench" / "cases"])
    assert len(cases) >= 30
    assert len({c["name"] for c in cases}) == len(cases)


def test_evaluate_on_the_fixture_universe(universe, index):
    cases = [c for c in selection_eval.load_cases([ROOT / "bench" / "cases"])
             if c["name"] in ("softmax-cpp", "docs-only", "prims-common-promotion")]
    sel = Selector(universe, index=index, generators={}, source_map=False)
    out = selection_eval.evaluate(sel, cases, {}, repeat=1)
    rows = {r["name"]: r for r in out["rows"]}
    assert rows["softmax-cpp"]["missed"] == ["log_softmax"]  # not in the fixture universe
    assert rows["docs-only"]["selected"] == 0 and out["false_selection"] == 0.0
    # issue 13: shared machinery selects one canary per op family (add for the binary family)
    assert rows["prims-common-promotion"]["recalled"] is True
    assert out["per_failure_recall"] == 1.0  # softmax and add (prims_common) found


def test_generated_universe_reaches_the_target(universe, index):
    items, entries = selection_eval.generated_universe(universe, index.entries,
                                                       [("add", None), ("linalg.vector_norm", None)], 60)
    assert len(items) == 60 and len({i.id for i in items}) == 60
    assert all(i.id in entries for i in items if i.op)
    gen = [i for i in items if i.suite == "upstream" and i.op == "linalg.vector_norm"]
    assert entries[gen[0].id] == ["aten::linalg_vector_norm"]


_lm_spec = importlib.util.spec_from_file_location("label_machinery", ROOT / "bench" / "label_machinery.py")
label_machinery = importlib.util.module_from_spec(_lm_spec)
_lm_spec.loader.exec_module(label_machinery)


def test_machinery_labels_are_the_reachable_ops_the_most_tests_execute():
    entries = {"t1": ["aten::unsqueeze", "aten::mul"], "t2": ["aten::unsqueeze"], "t3": ["aten::add", "aten::mul"],
               "t4": ["aten::mul", "aten::mul"], "m1": ["aten::unsqueeze"]}
    subjects = {"t1": "unsqueeze", "t2": "unsqueeze", "t3": "add", "t4": "mul"}  # m1: a module test
    assert label_machinery.most_executed(entries, subjects, 2) == [("mul", 3), ("unsqueeze", 3)]
    ti_ops = frozenset({"aten::mul", "aten::add"})
    kernels = label_machinery.reachable(["aten/src/ATen/TensorIterator.cpp"], ti_ops)
    assert label_machinery.most_executed(entries, subjects, 2, kernels) == [("mul", 3), ("add", 1)]
    assert label_machinery.reachable(["c10/core/TensorImpl.cpp"], ti_ops) is None  # every op
    kernels = label_machinery.tensor_iterator_ops()  # from the installed native_functions.yaml
    assert "aten::add" in kernels and "aten::view" not in kernels


def test_the_machinery_cases_carry_labels_from_execution_not_from_the_canary_rule():
    cases = label_machinery.machinery_cases()
    assert len(cases) >= 5
    for path in cases:
        case = json.loads(path.read_text())
        assert case["labelled_from"] == label_machinery.LABELLED_FROM, path.name
        assert case["failures"] == case["must_select"][:1]
