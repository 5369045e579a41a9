"""Issue 19, end to end through the pipeline (``relay.pipeline.run.run_change``, real pytest
subprocesses on the simulated device, one state directory and database):

* a pull request's head never feeds trunk history: a test that really flips pass / fail / pass
  in three runs of one PR head (``aten::_softmax:flaky=0.5``, the environment and commit a trunk
  flip would need) and then fails every attempt in a fourth is NEW — read as history, those runs
  would make it FLAKY (the old rule read every PR head as history);
* a test that really flips on trunk (``aten::_softmax:flaky=0.5``, a different
  ``SPYRE_SIM_FAULTS_SEED`` per run, pushes of one main commit) is FLAKY for a PR whose run
  fails on every attempt the same way, and the reason names the trunk runs that flipped.

Which attempt fails is a pure function of (seed, op, test, attempt) (``spyre_backend.faults``),
so the seeds are chosen here from the draws and the outcomes checked against them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from relay.domain.run import Run
from relay.pipeline.local import LocalExecutors
from relay.pipeline.ports import Ports
from relay.pipeline.request import RunConfig, RunRequest
from relay.pipeline.run import run_change
from relay.store import create_schema, make_engine, make_session_factory
from relay.store.run_store import SqlRunStore
from selection.models import ChangeSet
from spyre_backend.faults import attempt_draw
from tests.e2e.conftest import SOFTMAX_CHANGE

MAIN = "refs/heads/main"
SOFTMAX = "flk::TestCommon::test_compare_cpu[softmax-float16]"
RAISE_ENV = "current+faults=aten::_softmax:raise"
FLAKY_ENV = "current+faults=aten::_softmax:flaky=0.5"
ATTEMPTS = 3  # the runner's 1 + 2 reruns (test_specs.run.runner, PyTorch CI's convention)


class StoreSink:
    """The result sink of these runs: store the run, report nothing."""

    def __init__(self, store: SqlRunStore) -> None:
        self.store = store

    def accept(self, run: Run) -> str | None:
        self.store.save(run)
        return None


@pytest.fixture
def pipeline(tmp_path: Path, op_db_spec) -> Iterator:
    """``run(head, env, *, ref)``: one PR-shaped (or push-shaped) change of ``SOFTMAX_CHANGE``
    with head commit ``head`` on base ``v-base`` through the whole pipeline; returns the run."""
    spec = op_db_spec("flk", ["softmax", "add"], exclude=["softmax.with_dtype"])
    state = tmp_path / "state"
    state.mkdir()
    engine = make_engine(f"sqlite:///{state / 'relay.db'}")
    create_schema(engine)
    store = SqlRunStore(make_session_factory(engine), main_ref=MAIN)
    config = RunConfig(spec_paths=(spec,), state_dir=state)
    ports = Ports(executors=LocalExecutors.for_config(config), store=store, sink=StoreSink(store))

    def run(head: str, env: str, *, ref: str) -> Run:
        files = [dict(f, patch="@@ -1,3 +1,4 @@ def softmax(") if "_refs" in f["filename"] else f
                 for f in SOFTMAX_CHANGE["files"]]
        change = ChangeSet(upstream="pytorch/pytorch", base="v-base", head=head, files=files)
        request = RunRequest(changeset=change, trigger="webhook", ref=ref, head_env=env, base_env="current")
        return run_change(request, config, ports).run

    yield run
    engine.dispose()


def verdict(run: Run, test: str):
    return next(v for v in run.verdicts if v.id == test)


@pytest.mark.timeout(900)
def test_a_pull_requests_own_flips_are_not_trunk_history(pipeline, monkeypatch) -> None:
    seeds = _seeds(["passed", "failed", "passed", "failed"])
    runs = []
    for seed in seeds:  # four runs of one PR head, same environment: flips a trunk rule would count
        monkeypatch.setenv("SPYRE_SIM_FAULTS_SEED", str(seed))
        runs.append(pipeline("pr-head", FLAKY_ENV, ref="refs/pull/41/head"))
    assert [{r.id: r.outcome for r in run.results}[SOFTMAX] for run in runs] == [
        "passed", "failed", "passed", "failed"]
    last = {r.id: r for r in runs[-1].results}[SOFTMAX]
    assert last.attempts == ATTEMPTS  # failed on every attempt: no rerun evidence either
    v = verdict(runs[-1], SOFTMAX)
    assert (v.verdict, v.flaky_by, v.evidence) == ("NEW", None, []), v
    assert runs[-1].conclusion == "failure"


def _seeds(wanted: list[str]) -> list[int]:
    """Seeds under which the softmax test's three attempts end ``passed`` (first attempt
    passes) or ``failed`` (all fail), in the order wanted."""
    key = "flk.yaml::TestCommon::test_compare_cpu[softmax-float16]"  # spyre_backend.faults.test_key

    def outcome(seed: int) -> str:
        fails = [attempt_draw(seed, "aten::_softmax", key, a) < 0.5 for a in range(1, ATTEMPTS + 1)]
        return "passed" if not fails[0] else "failed" if all(fails) else "flaky"

    pool = {s: outcome(s) for s in range(1, 200)}
    out: list[int] = []
    for w in wanted:
        out.append(next(s for s, o in pool.items() if o == w and s not in out))
    return out


@pytest.mark.timeout(900)
def test_a_test_that_flips_on_trunk_is_flaky_naming_the_flipping_runs(pipeline, monkeypatch) -> None:
    *trunk_seeds, pr_seed = _seeds(["passed", "failed", "passed", "failed"])
    trunk: list[Run] = []
    for seed, expected in zip(trunk_seeds, ["passed", "failed", "passed"], strict=True):
        monkeypatch.setenv("SPYRE_SIM_FAULTS_SEED", str(seed))
        run = pipeline("main-head", FLAKY_ENV, ref=MAIN)  # pushes of one main commit
        assert {r.id: r.outcome for r in run.results}[SOFTMAX] == expected
        trunk.append(run)
    # one flip so far is no evidence: the failing trunk run itself was NEW
    assert verdict(trunk[1], SOFTMAX).verdict == "NEW"

    monkeypatch.setenv("SPYRE_SIM_FAULTS_SEED", str(pr_seed))
    pr = pipeline("pr-head", FLAKY_ENV, ref="refs/pull/42/head")
    result = {r.id: r for r in pr.results}[SOFTMAX]
    assert result.outcome == "failed" and result.attempts == ATTEMPTS
    v = verdict(pr, SOFTMAX)
    ids = [r.id for r in trunk]
    assert (v.verdict, v.flaky_by, v.evidence) == ("FLAKY", "trunk_flips", ids), v
    assert all(i in v.reason for i in ids) and "injected flaky fault" in v.reason
    assert pr.conclusion == "success"

    # the same failure under an injected regression is not history, and not this failure
    monkeypatch.setenv("SPYRE_SIM_FAULTS_SEED", str(pr_seed))
    other = pipeline("pr-head-2", RAISE_ENV, ref="refs/pull/43/head")
    assert verdict(other, SOFTMAX).verdict == "NEW"
