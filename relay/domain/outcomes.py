"""Run-level rules on test outcomes: counts, conclusion, and which results count as bad.

The outcome names and the bad / infra / passing sets are defined once, in
``test_specs.values.results`` (the runner reports them); everything in ``relay`` asks here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from test_specs.values.results import BAD_OUTCOMES, INFRA_OUTCOMES, OUTCOMES, PASSING_OUTCOMES, TestResult

__all__ = ["BAD_OUTCOMES", "INFRA_OUTCOMES", "PASSING_OUTCOMES", "OUTCOMES", "Conclusion",
           "count_outcomes", "conclude", "bad_results"]

Conclusion = Literal["success", "failure", "neutral"]


def count_outcomes(results: Iterable[TestResult]) -> dict[str, int]:
    """Results per outcome, every known outcome present (zeros included)."""
    counts = {o: 0 for o in OUTCOMES}
    for r in results:
        counts[r.outcome] += 1
    return counts


def conclude(results: Sequence[TestResult]) -> Conclusion:
    """``failure`` if any result is bad (failed, crashed, timed out); ``neutral`` if none ran;
    else ``success``."""
    if not results:
        return "neutral"
    return "failure" if any(r.outcome in BAD_OUTCOMES for r in results) else "success"


def bad_results(results: Iterable[TestResult]) -> list[TestResult]:
    """The bad results (failed, crashed, timed out), in the given order."""
    return [r for r in results if r.outcome in BAD_OUTCOMES]
