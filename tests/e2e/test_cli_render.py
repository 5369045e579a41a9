"""The CLI's human output: the progress line ends on totals by outcome, a counted step (the index
capture) draws a bar with an ETA, and the summary names FLAKY and NEW tests."""

from __future__ import annotations

import io

from rich.console import Console

from relay.cli.render import NAMED, BarProgress, print_named
from relay.domain.verdicts import Verdict
from test_specs.values.results import TestResult
from tests.fakes.runs import make_run


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, force_terminal=False, log_path=False), out


def _result(i: int, outcome: str) -> TestResult:
    return TestResult(id=f"s::t{i}", upstream="test/test_ops.py::TestCommon::test_x", outcome=outcome)  # type: ignore[arg-type]


def test_the_progress_line_ends_on_totals_by_outcome_not_the_last_test() -> None:
    console, out = _console()
    bar = BarProgress(console)
    bar.total(6)
    bar.phase("running tests")
    for i, outcome in enumerate(["passed", "failed", "xfailed", "passed", "failed", "xfailed"]):
        bar.result(_result(i, outcome))
    assert bar.totals() == "2 passed · 2 failed · 2 xfailed"
    bar.phase("refining")
    bar.result(_result(1, "passed"))  # a rerun replaces the first outcome, the count stays 6
    assert bar.totals() == "3 passed · 1 failed · 2 xfailed"
    bar.close()
    line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("tests"))
    assert "6/6" in line
    assert "2 passed · 2 failed · 2 xfailed" in line and "s::t5" not in line


def test_a_counted_step_draws_a_bar_with_an_eta_and_goes_away_when_done() -> None:
    console, out = _console()
    bar = BarProgress(console)
    for done in (0, 40, 100):
        bar.count("capturing the test → aten-op index", done, 100)
    assert bar.steps == {} and bar.bar.tasks == []  # finished and removed: the tests bar starts clean
    text = out.getvalue()
    assert "capturing the test → aten-op index" in text and "100/100" in text and "eta" in text


def test_the_summary_names_new_and_flaky_tests() -> None:
    console, out = _console()
    verdicts = ([Verdict(id="s::new", verdict="NEW", head="failed", base="passed", reason="fails on head")]
                + [Verdict(id=f"s::f{i}", verdict="FLAKY", head="flaky", base="passed", reason="rerun passed")
                   for i in range(NAMED + 2)]
                + [Verdict(id="s::ok", verdict="OK", head="passed", base="passed", reason="passes")])
    print_named(console, make_run("r", verdicts=verdicts))
    text = out.getvalue()
    assert "NEW s::new: fails on head" in text and "FLAKY s::f0: rerun passed" in text
    assert f"FLAKY s::f{NAMED - 1}" in text and f"s::f{NAMED}:" not in text and "… and 2 more FLAKY" in text
    assert "s::ok" not in text

    console, out = _console()
    print_named(console, make_run("p", outcomes=("passed", "flaky", "failed")))  # no baseline: results
    assert "FLAKY p::t1: failed, then passed on a rerun (1 attempts)" in out.getvalue()
    assert "p::t0" not in out.getvalue()
