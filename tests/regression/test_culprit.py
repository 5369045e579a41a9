from __future__ import annotations

import math

import pytest

from relay.domain.culprit import BisectStep, bisect


@pytest.mark.parametrize("bad_from", range(16))
def test_bisect_finds_first_bad_of_16_in_at_most_4_rounds(bad_from):
    commits = [f"c{i:02d}" for i in range(16)]
    calls = []

    def run(commit, tests):
        calls.append((commit, list(tests)))
        return set(tests) if int(commit[1:]) >= bad_from else set()

    c = bisect(commits, ["t1", "t2"], run)
    assert c.commit == f"c{bad_from:02d}"
    assert c.rounds == len(calls) <= math.ceil(math.log2(16))


def test_bisect_runs_only_the_failing_tests_and_narrows_them():
    commits = ["a", "b", "c", "d"]

    def run(commit, tests):
        assert set(tests) <= {"t1", "t2"}
        return {"t1"} if commit >= "b" else set()

    c = bisect(commits, ["t1", "t2"], run, verify_last=True)
    assert c.commit == "b" and c.tests == ["t1"] and c.rounds <= 3


def test_bisect_refuses_empty_and_good_head():
    with pytest.raises(ValueError):
        bisect([], ["t"], lambda c, t: set())
    with pytest.raises(ValueError, match="nothing to bisect"):
        bisect(["a"], ["t"], lambda c, t: set(), verify_last=True)


def test_each_round_records_its_commit_and_the_tests_that_failed_there():
    def run(commit, tests):
        return {"t1"} if commit >= "c" else set()

    c = bisect(["a", "b", "c", "d"], ["t1", "t2"], run, verify_last=True)
    assert c.steps == [BisectStep(commit="d", failed=["t1"]), BisectStep(commit="b", failed=[]),
                       BisectStep(commit="c", failed=["t1"])]
    assert (c.commit, c.tests, c.rounds) == ("c", ["t1"], 3)


@pytest.mark.parametrize(("commits", "tests"), [([], ["t"]), (["a"], [])])
def test_bisect_says_it_needs_a_commit_and_a_failing_test(commits, tests):
    with pytest.raises(ValueError) as err:
        bisect(commits, tests, lambda c, t: set())
    assert str(err.value) == "bisect needs at least one commit and one failing test"
