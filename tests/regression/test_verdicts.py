from __future__ import annotations

import pytest

from relay.domain.verdicts import classify, classify_all, conclusion, count, flips
from test_specs.results import TestResult


def r(outcome: str, id: str = "s::t[add-float16]", message: str | None = None) -> TestResult:
    return TestResult(id=id, upstream="u", outcome=outcome, message=message)


@pytest.mark.parametrize(("head", "base", "history", "expected"), [
    ("failed", "passed", (), "NEW"),
    ("failed", None, (), "NEW"),
    ("failed", "failed", (), "BROKEN_TRUNK"),
    ("failed", "crashed", (), "BROKEN_TRUNK"),
    ("failed", "passed", ("passed", "failed", "passed"), "FLAKY"),
    ("flaky", "passed", (), "FLAKY"),
    ("xfailed", "xfailed", (), "KNOWN"),
    ("xpassed", "xfailed", (), "KNOWN"),
    ("skipped", None, (), "KNOWN"),
    ("passed", "failed", (), "FIXED"),
    ("passed", "passed", (), "OK"),
    ("passed", None, (), "OK"),
    ("crashed", "passed", (), "INFRA"),
    ("timed_out", "passed", (), "INFRA"),
])
def test_verdict_table(head, base, history, expected):
    v = classify(r(head), r(base) if base else None, history)
    assert v.verdict == expected
    assert v.reason


def test_unexpected_pass_says_the_spec_can_be_tightened():
    assert "tightened" in classify(r("xpassed"), None).reason


def test_conclusion_is_failure_iff_new():
    head = [r("failed", "a"), r("passed", "b")]
    assert conclusion(classify_all(head, [r("failed", "a"), r("passed", "b")])) == "success"
    assert conclusion(classify_all(head, [r("passed", "a"), r("passed", "b")])) == "failure"
    assert conclusion([]) == "neutral"
    assert count(classify_all(head, None)) == {"NEW": 1, "FLAKY": 0, "BROKEN_TRUNK": 0, "KNOWN": 0,
                                                "FIXED": 0, "INFRA": 0, "OK": 1}


def test_flips_counts_pass_fail_changes_only():
    assert flips(["passed", "failed", "skipped", "passed", "failed"]) == 3
    assert flips(["failed", "failed"]) == 0


@pytest.mark.parametrize(("head", "base", "expected"), [
    ("failed", "passed", "FLAKY"),
    ("failed", None, "FLAKY"),
    ("failed", "failed", "FLAKY"),
    ("passed", "passed", "OK"),
    ("crashed", "passed", "INFRA"),
    ("xfailed", "xfailed", "KNOWN"),
])
def test_a_quarantined_test_never_fails_the_run(head, base, expected):
    issue = "DISABLED s::t[add-float16] (https://github.com/acme/ci/issues/3)"
    v = classify(r(head), r(base) if base else None, quarantined=issue)
    assert v.verdict == expected
    if expected == "FLAKY":
        assert issue in v.reason


def test_classify_all_threads_quarantined_ids():
    head = [r("failed", "a"), r("failed", "b")]
    verdicts = classify_all(head, [r("passed", "a"), r("passed", "b")],
                            quarantined={"a": "DISABLED a (no issue filed)"})
    assert [v.verdict for v in verdicts] == ["FLAKY", "NEW"]
    assert conclusion(verdicts[:1]) == "success" and conclusion(verdicts) == "failure"
