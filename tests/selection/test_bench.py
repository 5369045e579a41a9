"""The recall harness: its cases are valid and its figures are computed as documented."""

from __future__ import annotations

import importlib.util
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
