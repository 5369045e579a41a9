"""A webhook run's progress reaches the deliveries page: ``DeliveryProgress`` (the pipeline's
Progress port of a webhook run) writes the phase, tests done of total and outcomes so far —
at each phase and at most once per interval while tests finish — and never fails the run."""

from __future__ import annotations

import time

from relay.store.progress import progress_for
from relay.worker.progress import DeliveryProgress
from test_specs.values.results import TestResult


def _result(i: int, outcome: str) -> TestResult:
    return TestResult(id=f"s::t{i}", upstream="u", outcome=outcome)  # type: ignore[arg-type]


def test_progress_is_written_per_phase_and_throttled_per_result(one_delivery) -> None:
    sf = one_delivery
    progress = DeliveryProgress(sf, "d-1", interval_s=60.0)
    progress.phase("selecting")
    with sf() as s:
        assert progress_for(s, ["d-1"])["d-1"]["phase"] == "selecting"
    progress.count("capturing the test → aten-op index", 50, 100)  # throttled: not written
    progress.total(3)
    progress.result(_result(0, "passed"))  # throttled
    with sf() as s:
        row = progress_for(s, ["d-1"])["d-1"]
    assert (row["phase"], row["total"], row["done"]) == ("capturing the test → aten-op index: 50/100", 3, 0)
    progress.result(_result(1, "failed"))
    progress.result(_result(2, "xfailed"))  # the last test: written at once
    progress.result(_result(1, "passed"))  # a rerun replaces the outcome, done stays 3
    progress.phase("refining")
    with sf() as s:
        row = progress_for(s, ["d-1"])["d-1"]
    assert (row["phase"], row["done"], row["counts"]) == ("refining", 3, {"passed": 2, "xfailed": 1})


def test_progress_writes_at_most_once_per_interval_and_survives_a_broken_database(one_delivery) -> None:
    sf = one_delivery
    progress = DeliveryProgress(sf, "d-1", interval_s=0.05)
    progress.total(100)
    progress.result(_result(0, "passed"))
    time.sleep(0.06)
    progress.result(_result(1, "passed"))
    with sf() as s:
        assert progress_for(s, ["d-1"])["d-1"]["done"] == 2

    def broken():
        raise RuntimeError("database gone")

    failing = DeliveryProgress(broken, "d-1")
    failing.phase("selecting")  # logged, not raised
    failing.result(_result(0, "passed"))
