"""Run-level rules on outcomes (``relay.domain.outcomes``): every outcome counted (zeros kept),
the conclusion is failure iff a result is bad, neutral when nothing ran."""

from __future__ import annotations

import pytest

from relay.domain.outcomes import OUTCOMES, bad_results, conclude, count_outcomes
from test_specs.values.results import TestResult


def r(outcome: str, n: int = 0) -> TestResult:
    return TestResult(id=f"s::t{n}", upstream="u", outcome=outcome)  # type: ignore[arg-type]


def test_counts_hold_every_outcome_and_count_each_result_once() -> None:
    counts = count_outcomes([r("passed", 1), r("passed", 2), r("failed", 3)])
    assert counts == {o: 0 for o in OUTCOMES} | {"passed": 2, "failed": 1}
    assert count_outcomes([]) == dict.fromkeys(OUTCOMES, 0)


@pytest.mark.parametrize(("outcomes", "conclusion"), [
    ((), "neutral"),
    (("passed", "skipped", "xfailed", "flaky", "xpassed"), "success"),
    (("passed", "failed"), "failure"),
    (("crashed",), "failure"),
    (("passed", "timed_out"), "failure"),
])
def test_a_run_fails_iff_a_result_is_bad_and_is_neutral_when_nothing_ran(outcomes, conclusion) -> None:
    assert conclude([r(o, i) for i, o in enumerate(outcomes)]) == conclusion


def test_bad_results_are_the_failed_crashed_and_timed_out_in_order() -> None:
    results = [r(o, i) for i, o in enumerate(("timed_out", "passed", "failed", "xfailed", "crashed", "flaky"))]
    assert [x.outcome for x in bad_results(results)] == ["timed_out", "failed", "crashed"]
