from __future__ import annotations

import pytest

from relay.domain.flakiness import (
    QuarantineNote,
    TrunkResult,
    env_key,
    injects_regression,
    same_failure,
    trunk_flips,
)
from relay.domain.verdicts import classify, classify_all, conclusion, count
from test_specs.values.results import TestResult

BOOM = "RuntimeError: spyre: injected flaky fault: aten::_softmax failed on the device"
OTHER = "AssertionError: Tensor-likes are not close!"
SHA = "a" * 40


def r(outcome: str, id: str = "s::t[add-float16]", message: str | None = None, attempts: int = 1) -> TestResult:
    return TestResult(id=id, upstream="u", outcome=outcome, message=message, attempts=attempts)


def t(run: str, outcome: str, message: str | None = None, head: str = SHA, build: str = "current") -> TrunkResult:
    return TrunkResult(run_id=run, head=head, build=build, outcome=outcome,
                       message=message if outcome == "failed" else None)


#: passed / failed / passed on one commit and build: two flips of BOOM (HUD's green / red / green)
GREEN_RED_GREEN = (t("r1", "passed"), t("r2", "failed", BOOM), t("r3", "passed"))


@pytest.mark.parametrize(("head", "base", "expected"), [
    ("failed", "passed", "NEW"),
    ("failed", None, "NEW"),
    ("failed", "failed", "BROKEN_TRUNK"),
    ("failed", "crashed", "BROKEN_TRUNK"),
    ("flaky", "passed", "FLAKY"),
    ("xfailed", "xfailed", "KNOWN"),
    ("xpassed", "xfailed", "KNOWN"),
    ("skipped", None, "KNOWN"),
    ("passed", "failed", "FIXED"),
    ("passed", "passed", "OK"),
    ("passed", None, "OK"),
    ("crashed", "passed", "INFRA"),
    ("timed_out", "passed", "INFRA"),
])
def test_verdict_table(head, base, expected):
    v = classify(r(head), r(base) if base else None)
    assert v.verdict == expected
    assert v.reason


def test_a_rerun_pass_is_flaky_naming_this_run():
    v = classify(r("flaky", attempts=2), r("passed"), run_id="run-7")
    assert (v.verdict, v.flaky_by, v.evidence) == ("FLAKY", "rerun", ["run-7"])
    assert "run-7" in v.reason and "2 attempts" in v.reason


def test_unexpected_pass_says_the_spec_can_be_tightened():
    assert "tightened" in classify(r("xpassed"), None).reason


def test_conclusion_is_failure_iff_new():
    head = [r("failed", "a"), r("passed", "b")]
    assert conclusion(classify_all(head, [r("failed", "a"), r("passed", "b")])) == "success"
    assert conclusion(classify_all(head, [r("passed", "a"), r("passed", "b")])) == "failure"
    assert conclusion([]) == "neutral"
    assert count(classify_all(head, None)) == {"NEW": 1, "FLAKY": 0, "BROKEN_TRUNK": 0, "KNOWN": 0,
                                                "FIXED": 0, "INFRA": 0, "OK": 1}


def test_the_same_failure_flipping_twice_on_one_trunk_commit_is_flaky_with_its_runs():
    v = classify(r("failed", message=BOOM), r("passed"), GREEN_RED_GREEN)
    assert (v.verdict, v.flaky_by, v.evidence) == ("FLAKY", "trunk_flips", ["r1", "r2", "r3"])
    assert "r1 passed -> r2 failed" in v.reason and "r2 failed -> r3 passed" in v.reason
    assert SHA[:12] in v.reason


@pytest.mark.parametrize(("trunk", "message", "why"), [
    (GREEN_RED_GREEN[:2], BOOM, "one flip is not enough"),
    (GREEN_RED_GREEN, OTHER, "a different failure than the one that flipped"),
    (GREEN_RED_GREEN, None, "no message to compare"),
    ((t("r1", "passed", head="1" * 40), t("r2", "failed", BOOM, head="2" * 40),
      t("r3", "passed", head="3" * 40)), BOOM, "three commits: each may have changed the test"),
    ((t("r1", "passed", build="w1"), t("r2", "failed", BOOM, build="w2"),
      t("r3", "passed", build="w3")), BOOM, "three torch builds of one commit"),
    ((t("r1", "failed", BOOM), t("r2", "failed", BOOM), t("r3", "failed", BOOM)), BOOM,
     "always failing on trunk is not flaky"),
])
def test_no_flip_evidence_means_new(trunk, message, why):
    v = classify(r("failed", message=message), r("passed"), trunk)
    assert v.verdict == "NEW", why
    assert v.flaky_by is None and v.evidence == []


def test_other_outcomes_neither_flip_nor_break_a_flip():
    trunk = (t("r1", "passed"), t("x", "skipped"), t("r2", "failed", BOOM), t("y", "crashed"), t("r3", "passed"))
    assert [(f.before.run_id, f.after.run_id) for f in trunk_flips(trunk)] == [("r1", "r2"), ("r2", "r3")]


def test_flips_interleaved_across_commits_pair_within_each_commit():
    other = "b" * 40
    trunk = (t("a1", "passed"), t("b1", "failed", BOOM, head=other), t("a2", "failed", BOOM),
             t("b2", "passed", head=other))
    assert {(f.before.run_id, f.after.run_id) for f in trunk_flips(trunk)} == {("a1", "a2"), ("b1", "b2")}
    v = classify(r("failed", message=BOOM), r("passed"), trunk)
    assert v.verdict == "FLAKY" and v.evidence == ["a1", "a2", "b1", "b2"]


@pytest.mark.parametrize(("head", "base", "expected"), [
    ("failed", "passed", "FLAKY"),
    ("failed", None, "FLAKY"),
    ("failed", "failed", "FLAKY"),
    ("passed", "passed", "OK"),
    ("crashed", "passed", "INFRA"),
    ("xfailed", "xfailed", "KNOWN"),
])
def test_a_quarantined_test_never_fails_the_run(head, base, expected):
    note = QuarantineNote("DISABLED s::t[add-float16] (https://github.com/acme/ci/issues/3)", ("q1", "q2", "q3"))
    v = classify(r(head), r(base) if base else None, quarantined=note)
    assert v.verdict == expected
    if expected == "FLAKY":
        assert note.issue in v.reason and "q1, q2, q3" in v.reason
        assert (v.flaky_by, v.evidence) == ("quarantine", ["q1", "q2", "q3"])


def test_a_quarantine_record_without_runs_points_at_its_issue():
    v = classify(r("failed"), r("passed"), quarantined=QuarantineNote("DISABLED x (no issue filed)"))
    assert v.verdict == "FLAKY" and "listed in the issue" in v.reason


def test_classify_all_threads_quarantine_trunk_history_and_the_run_id():
    head = [r("failed", "a"), r("failed", "b", BOOM), r("failed", "c", BOOM), r("flaky", "d")]
    verdicts = classify_all(head, [r("passed", i) for i in "abcd"], {"b": GREEN_RED_GREEN},
                            quarantined={"a": QuarantineNote("DISABLED a (no issue filed)")}, run_id="me")
    assert [v.verdict for v in verdicts] == ["FLAKY", "FLAKY", "NEW", "FLAKY"]
    assert [v.flaky_by for v in verdicts] == ["quarantine", "trunk_flips", None, "rerun"]
    assert verdicts[3].evidence == ["me"]
    assert conclusion(verdicts[:2]) == "success" and conclusion(verdicts) == "failure"


@pytest.mark.parametrize(("faults", "regression"), [
    (None, False), ("", False), ("aten::_softmax:flaky=0.3", False),
    ("aten::_softmax:flaky=0.3, aten::mm:raise", True), ("aten::add:offset=0.5", True),
    ("aten::add:nan", True), ("aten::add:abort", True), ("aten::add:hang", True), ("garbage", True),
    ("aten::mm:raise,aten::_softmax:flaky=0.3", True), (",aten::mm:raise", True),
    ("aten::_softmax:flaky=0.3,,aten::mm:raise", True),
    # unreadable flaky values (spyre_backend.faults refuses them): counted as a regression
    ("aten::_softmax:flaky=lots", True), ("aten::_softmax:flaky=1.5", True), ("aten::_softmax:flaky=0.3=1", True),
    ("aten::_softmax:flaky=0,aten::mm:flaky=1", False),
])
def test_only_flaky_faults_keep_a_run_in_trunk_history(faults, regression):
    assert injects_regression(faults) is regression


def test_env_key_compares_per_commit_templates_and_nothing_else():
    a, b = "1" * 40, "2" * 40
    assert env_key(f"https://w/torch-{a}.whl", a) == env_key(f"https://w/torch-{b}.whl", b)
    assert env_key("current", a) == "current" != env_key("current+faults=aten::mm:flaky=0.1", a)
    assert env_key("torch==2.13.0", None) == "torch==2.13.0"
    short = "abcdef1"  # the shortest sha a name may carry (git's default abbreviation)
    assert env_key(f"https://w/torch-{short}.whl", short) == "https://w/torch-{sha}.whl"
    assert env_key("torch-abcdef.whl", "abcdef") == "torch-abcdef.whl"  # 6 characters: not a commit


def test_same_failure_compares_first_lines():
    assert same_failure(BOOM + "\n  at line 3", "  " + BOOM)
    assert not same_failure(BOOM, OTHER) and not same_failure(None, None) and not same_failure("", "")


LONG = "E" * 300


@pytest.mark.parametrize(("head", "base", "kwargs", "reason"), [
    (r("failed"), r("passed"), {}, "fails on head, passed on base"),
    (r("failed"), None, {}, "fails on head; not run on base (new test)"),
    (r("failed"), r("crashed"), {}, "fails on base too (crashed)"),
    (r("passed"), r("timed_out"), {}, "timed_out on base, passes on head"),
    (r("passed"), r("passed"), {}, "passes"),
    (r("xpassed"), None, {}, "unexpected pass of an xfail test: the spec can be tightened"),
    (r("skipped"), None, {}, "skipped as the spec expects"),
    (r("timed_out"), r("passed"), {}, "runner timed out: no message"),
    (r("crashed", message="Fatal Python error: Aborted\n  File x"), None, {},
     "runner crashed: Fatal Python error: Aborted"),
    (r("crashed", message=LONG + "\nsecond"), None, {}, f"runner crashed: {LONG[:200]}"),
    (r("flaky", attempts=2), None, {}, "failed, then passed on a rerun in this run (2 attempts)"),
    (r("flaky", attempts=3), None, {"run_id": "r9"}, "failed, then passed on a rerun in run r9 (3 attempts)"),
    (r("failed"), None, {"quarantined": QuarantineNote("DISABLED x (no issue filed)")},
     "quarantined: DISABLED x (no issue filed); its flaky runs are listed in the issue; failure ignored"),
    (r("failed", message="E" * 200 + "\nmore"), r("passed"),
     {"trunk": (t("r1", "passed"), t("r2", "failed", "E" * 200), t("r3", "passed"))},
     "same failure flipped 2x on trunk runs of one commit and torch build (no change in between): "
     f"r1 passed -> r2 failed at {SHA[:12]}; r2 failed -> r3 passed at {SHA[:12]}; failure: {'E' * 160!r}"),
])
def test_each_verdict_reason_reads_as_a_reviewer_sees_it(head, base, kwargs, reason):
    """The reason is the dashboard's and the PR comment's explanation: its exact words."""
    v = classify(head, base, **kwargs)
    assert v.reason == reason
    assert (v.head, v.base) == (head.outcome, base.outcome if base else None)


def test_count_counts_every_verdict():
    head = [r("failed", "a"), r("failed", "b"), r("passed", "c")]
    assert count(classify_all(head, None)) == {"NEW": 2, "FLAKY": 0, "BROKEN_TRUNK": 0, "KNOWN": 0,
                                                "FIXED": 0, "INFRA": 0, "OK": 1}


def test_against_a_trunk_baseline_only_the_same_failure_is_broken_trunk_and_names_its_run() -> None:
    """Dr. CI's rule for a trunk baseline (issue 27): BROKEN_TRUNK when trunk failed the same way,
    naming the trunk run as evidence; a different failure there is NEW; a trunk failure passing
    now is FIXED naming the run; a failure no trunk run saw gets the given reason."""
    src = ("trunk1", SHA)
    same = classify(r("failed", message=BOOM), r("failed", message=BOOM), base_from=src, same_way=True)
    assert same.verdict == "BROKEN_TRUNK" and same.evidence == ["trunk1"]
    assert "trunk run trunk1 at aaaaaaaaaaaa" in same.reason and "the same way" in same.reason
    other = classify(r("failed", message=BOOM), r("failed", message=OTHER), base_from=src, same_way=True)
    assert other.verdict == "NEW" and "fails differently in trunk run trunk1" in other.reason
    # without same_way (a base environment), any base failure is BROKEN_TRUNK as before
    assert classify(r("failed", message=BOOM), r("failed", message=OTHER)).verdict == "BROKEN_TRUNK"
    fixed = classify(r("passed"), r("failed", message=BOOM), base_from=src, same_way=True)
    assert fixed.verdict == "FIXED" and fixed.evidence == ["trunk1"] and "trunk1" in fixed.reason
    unseen = classify(r("failed", message=BOOM), None, unseen="fails; first trunk run of this test")
    assert unseen.verdict == "NEW" and unseen.reason == "fails; first trunk run of this test"
