"""``relay.pipeline.audit``: why selection dropped a test, the sample, and the report's figures."""

from __future__ import annotations

import pytest

from relay.pipeline.audit import (
    MIN_OUTCOME_CHANGES,
    VERDICT_EXIT,
    AuditReport,
    OutcomeChange,
    explain_drops,
    normal_outcome,
    sample,
)
from selection.index.op_index import TestOpIndex
from selection.models import ChangeSet
from selection.pipeline import Selector
from tests.selection.conftest import item


@pytest.fixture
def selector() -> Selector:
    universe = [item("softmax"), item("add"), item("mul"), item("add", "float64"),
                item("Linear", module="nn.Linear")]
    index = TestOpIndex({universe[0].id: ["aten::_softmax"], universe[1].id: ["aten::add"],
                         universe[2].id: ["aten::mul", "aten::view"], universe[3].id: ["aten::add"]})
    return Selector(universe, index=index, generators={}, source_map=False)


def _ids(sel: Selector) -> dict[str, str]:
    return {(i.module or f"{i.op}-{i.dtype}"): i.id for i in sel.items}


def test_each_dropped_test_gets_its_stage_and_reason(selector: Selector) -> None:
    ids = _ids(selector)
    change = ChangeSet(base="a", head="b", files=[{"filename": "torch/include/ATen/ops/add_native.h"}])
    drops = explain_drops(selector, change, list(ids.values()))
    assert ids["add-float16"] not in drops  # selected
    # an op change reaches the module tests too (issue 13); nn.Linear has no capture: kept
    assert ids["nn.Linear"] not in drops
    stage, why = drops[ids["mul-float16"]]
    assert stage == "memory"
    assert "aten::mul, aten::view" in why and "impacts 1 aten ops (aten::add)" in why
    stage, why = drops[ids["add-float64"]]  # reached, but float64 is not a Spyre dtype
    assert stage == "classify" and "unsupported dtype" in why
    assert explain_drops(selector, change, ["no::such[test]"]) == {
        "no::such[test]": ("universe", "not in the selection universe")}


def test_sample_spreads_over_the_universe_and_rejects_a_bad_limit(selector: Selector) -> None:
    items = selector.items
    assert sample(items, None) == items and sample(items, 99) == items
    picked = sample(items, 2)
    assert picked == [items[0], items[2]]
    with pytest.raises(ValueError, match="at least 1"):
        sample(items, 0)


def _change(tid: str, base: str, head: str, selected: bool) -> OutcomeChange:
    return OutcomeChange(id=tid, base=base, head=head, selected=selected)


def test_report_figures() -> None:
    assert normal_outcome("flaky") == "passed" and normal_outcome("xfailed") == "xfailed"
    changes = [_change("a", "passed", "failed", True), _change("b", "passed", "crashed", False),
               _change("c", "xfailed", "xpassed", True), _change("d", "failed", "passed", False)]
    report = AuditReport(title="t", base="a", head="b", mode="pr", universe=200, selected=10,
                         audited=100, selected_audited=5, changes=changes)
    assert [c.id for c in report.misses] == ["b", "d"]
    assert report.recall == 0.5 and report.regression_recall == 0.5 and report.share == 0.05
    s = report.summary()
    assert (s["outcome_changes"], s["regressions"], s["missed"]) == (4, 2, 2)
    assert s["verdict"] == "missed" and s["recall"] == 0.5  # a miss is evidence, however few changes
    empty = AuditReport(title="t", base="a", head="b", mode="pr", universe=0, selected=0, audited=0,
                        selected_audited=0)
    assert empty.recall == 1.0 and empty.share == 0.0  # nothing changed: nothing missed
    # ... but nothing to miss proves nothing: inconclusive, no recall claimed (issue 28)
    assert empty.verdict == "inconclusive" and empty.summary()["recall"] is None


def test_fewer_than_20_caught_changes_are_inconclusive_20_are_a_recall() -> None:
    few = [_change(f"t{n}", "passed", "failed", True) for n in range(MIN_OUTCOME_CHANGES - 1)]
    report = AuditReport(title="t", base="a", head="b", mode="pr", universe=100, selected=50,
                         audited=100, selected_audited=50, changes=few)
    assert report.verdict == "inconclusive" and report.summary()["regression_recall"] is None
    enough = report.model_copy(update={"changes": few + [_change("last", "passed", "failed", True)]})
    assert enough.verdict == "recall" and enough.summary()["recall"] == 1.0
    assert VERDICT_EXIT["inconclusive"] not in (VERDICT_EXIT["recall"], VERDICT_EXIT["missed"], 2)
