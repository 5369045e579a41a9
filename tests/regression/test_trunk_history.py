"""Trunk history (``relay.store.regression.trunk_history``) on SQLite and PostgreSQL: only runs of
the main ref, never a pull request's, on the same backend and environment without an injected
regression feed FLAKY-by-flips verdicts (issue 19), and FLAKY verdicts keep their evidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from relay.domain.run import Run
from relay.pipeline.baseline import verdicts_for
from relay.store import save_run
from relay.store.regression import trunk_history
from relay.store.run_store import SqlRunStore
from relay.store.runs import load_run
from relay.store.tables import DeliveryRecord
from test_specs.values.results import TestResult

T = "ops::TestCommon::test_compare_cpu[softmax-float16]"
MAIN = "refs/heads/main"
FLAKY_ENV = "current+faults=aten::_softmax:flaky=0.5"
BOOM = "RuntimeError: spyre: injected flaky fault: aten::_softmax failed on the device"
RAISE = "RuntimeError: spyre: injected fault: aten::_softmax failed on the device"
HEAD = "c" * 40
T0 = datetime(2026, 12, 1, tzinfo=UTC)


class Store:
    """Adds runs of one test with their head environment to the store, one minute apart."""

    def __init__(self, factory) -> None:
        self.factory = factory
        self.n = count(1)

    def add(self, outcome: str, *, ref: str | None = MAIN, env: str | None = FLAKY_ENV, head: str = HEAD,
            backend: str = "spyre-sim", trigger: str = "webhook", event: str | None = "push",
            message: str | None = None, wheel: str | None = None) -> str:
        n = next(self.n)
        run_id = f"run{n:03d}"
        msg = message if message is not None else (BOOM if outcome == "failed" else None)
        results = [TestResult(id=T, upstream="u", outcome=outcome, message=msg)]  # type: ignore[arg-type]
        envs = {} if env is None else {"head": {"name": env, "faults": env.partition("+faults=")[2] or None,
                                                "torch_version": "2.13.0", "torch_wheel_sha256": wheel}}
        with self.factory() as s:
            delivery = None
            if event is not None:
                delivery = f"d-{run_id}"
                s.add(DeliveryRecord(delivery_id=delivery, event=event))
            at = T0 + timedelta(minutes=n)
            save_run(s, Run(id=run_id, backend=backend, base="b" * 40, head=head, trigger=trigger,  # type: ignore[arg-type]
                            ref=ref, delivery_id=delivery, started_at=at, finished_at=at,
                            conclusion=Run.conclude(results), results=results,
                            counts=Run.count_outcomes(results), environments=envs))
        return run_id

    def history(self, env: str = FLAKY_ENV, head: str | None = "f" * 40, backend: str = "spyre-sim") -> list[str]:
        with self.factory() as s:
            found = trunk_history(s, [T], main_ref=MAIN, backend=backend, env_name=env, head=head)
        return [r.run_id for r in found.get(T, [])]


def test_only_trunk_runs_of_this_backend_and_environment_are_history(factory):
    st = Store(factory)
    trunk = [st.add("passed"), st.add("failed", event=None)]  # a push, and a run without delivery
    st.add("failed", ref="refs/pull/7/head", event="pull_request")  # a PR head: never history
    st.add("passed", ref=MAIN, event="pull_request")  # a PR run stored with its base ref (old rows)
    st.add("failed", ref=None, trigger="replay", event=None)  # a replay of a file: no ref
    st.add("passed", trigger="baseline", event=None)  # helper runs are not signal
    st.add("failed", ref="refs/heads/release/2.13")
    st.add("failed", backend="other-sim")
    other_env = st.add("passed", env="current")  # another environment
    st.add("failed", env="current+faults=aten::_softmax:raise")  # an injected regression
    st.add("passed", env=FLAKY_ENV + ",aten::mm:offset=0.1")
    st.add("failed", env=None)  # no environment stored: unknown
    st.add("crashed")  # not a flip outcome
    assert st.history() == trunk
    assert st.history(env="current") == [other_env] and st.history(backend="other-sim") == ["run008"]


def test_history_is_oldest_first_and_bounded(factory):
    st = Store(factory)
    ids = [st.add("passed" if i % 2 else "failed") for i in range(55)]
    assert st.history() == ids[-50:]


def test_a_per_commit_wheel_template_is_the_same_environment(factory):
    st = Store(factory)
    a, b = "1" * 40, "2" * 40
    mine = st.add("passed", env=f"https://w/torch-{a}.whl", head=a)
    st.add("passed", env=f"https://w/torch-{a}.whl", head=b)  # another commit's wheel name: not ours
    assert st.history(env=f"https://w/torch-{b}.whl", head=b) == [mine]


def _verdict(factory, message: str = BOOM, env: str = FLAKY_ENV):
    head = [TestResult(id=T, upstream="u", outcome="failed", message=message)]
    base = {T: TestResult(id=T, upstream="u", outcome="passed")}
    store = SqlRunStore(factory, main_ref=MAIN)
    [v] = verdicts_for(head, base, store, run_id="now", backend="spyre-sim", env_name=env, head_sha="f" * 40)
    return v


def test_flips_of_pull_request_heads_never_make_a_failure_flaky(factory):
    """Issue 19's case: a test one PR broke and main kept green is NEW for the next PR that
    breaks it again, however often PR heads flipped."""
    st = Store(factory)
    for outcome in ("failed", "passed", "failed", "passed", "failed"):
        st.add(outcome, ref=f"refs/pull/{next(st.n)}/head", event="pull_request", message=RAISE)
    st.add("passed", env="current")
    assert _verdict(factory, RAISE).verdict == "NEW"


def test_trunk_flips_of_the_same_failure_are_flaky_and_name_the_runs(factory):
    st = Store(factory)
    runs = [st.add("passed"), st.add("failed"), st.add("passed")]
    v = _verdict(factory)
    assert (v.verdict, v.flaky_by, v.evidence) == ("FLAKY", "trunk_flips", runs)
    assert all(r in v.reason for r in runs)
    assert _verdict(factory, RAISE).verdict == "NEW"  # a different failure than the one that flips


@pytest.mark.parametrize("vary", ["head", "wheel"])
def test_flips_across_commits_or_builds_are_no_evidence(factory, vary):
    st = Store(factory)
    for i, outcome in enumerate(("passed", "failed", "passed")):
        st.add(outcome, **({"head": f"{i + 1}" * 40} if vary == "head" else {"wheel": f"sha{i}"}))
    assert _verdict(factory).verdict == "NEW"


def test_a_flaky_verdict_keeps_its_rule_and_evidence_when_stored(factory):
    st = Store(factory)
    runs = [st.add("passed"), st.add("failed"), st.add("passed")]
    v = _verdict(factory)
    results = [TestResult(id=T, upstream="u", outcome="failed", message=BOOM)]
    with factory() as s:
        save_run(s, Run(id="judged", base="b" * 40, head="f" * 40, started_at=T0, finished_at=T0,
                        conclusion="success", results=results, verdicts=[v]))
        [back] = load_run(s, "judged").verdicts
    assert back == v and back.evidence == runs
