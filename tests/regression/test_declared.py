"""Readiness of the declared items (``relay.domain.declared``): an xfail or skip item doing what
its spec declares is ready; only an item declared to pass and not passing is not (issue 27)."""

from __future__ import annotations

import pytest

from relay.domain.declared import as_declared, declared_readiness
from test_specs.values.results import TestResult


def r(mode: str, outcome: str, i: int = 0) -> TestResult:
    return TestResult(id=f"s::t[op{i}-float16]", upstream="u", mode=mode, outcome=outcome)


@pytest.mark.parametrize(("mode", "outcome", "ready"), [
    ("mandatory_success", "passed", True), ("mandatory_success", "flaky", True),
    ("mandatory_success", "failed", False), ("mandatory_success", "crashed", False),
    ("mandatory_success", "skipped", False),
    ("xfail", "xfailed", True), ("xfail", "xpassed", True), ("xfail", "failed", False),
    ("xfail_strict", "xfailed", True), ("xfail_strict", "failed", False),
    ("skip", "skipped", True), ("skip", "passed", False),
])
def test_each_mode_is_ready_when_it_does_what_it_declares(mode: str, outcome: str, ready: bool) -> None:
    assert as_declared(r(mode, outcome)) is ready


def test_declared_readiness_counts_xfail_and_skip_items_as_ready_and_lists_the_rest() -> None:
    results = [r("mandatory_success", "passed", 0), r("xfail", "xfailed", 1), r("skip", "skipped", 2),
               r("xfail", "xpassed", 3), r("mandatory_success", "failed", 4)]
    got = declared_readiness(results, run_id="run1")
    assert (got["items"], got["as_declared"], got["share"]) == (5, 4, 0.8)
    assert got["not_as_declared"] == ["s::t[op4-float16]"] and got["stale"] == ["s::t[op3-float16]"]
    assert got["run"] == "run1" and declared_readiness([])["share"] is None
