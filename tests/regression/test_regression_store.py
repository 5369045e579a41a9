"""Stored regression data (``relay.store.regression``) on SQLite and PostgreSQL: a run's
environments and verdicts come back as they were saved (a re-save replaces them), and a stored
baseline is only a run *of* the base commit, on this backend, whose head environment has this
environment's name — newest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from relay.domain.run import Run
from relay.domain.verdicts import Verdict
from relay.store import save_run
from relay.store.regression import find_baseline, load_environments, load_verdicts, save_regression

T0 = datetime(2026, 12, 1, tzinfo=UTC)
BASE = "b" * 40
ENV = {"name": "torch==2.13.0", "faults": "aten::mm:flaky=0.1", "torch_version": "2.13.0",
       "torch_git_version": "abc123", "torch_wheel_sha256": "f" * 64}
VERDICTS = [
    Verdict(id="s::b", verdict="FLAKY", head="failed", base="passed", reason="flipped",
            flaky_by="trunk_flips", evidence=["r1", "r2"]),
    Verdict(id="s::a", verdict="NEW", head="failed", base=None, reason="new test"),
]


def _run(session, run_id: str, *, head: str = BASE, backend: str = "spyre-sim", minutes: int = 0,
         env: str | None = "current", environments: dict | None = None) -> None:
    at = T0 + timedelta(minutes=minutes)
    envs = environments if environments is not None else ({"head": {"name": env}} if env else {})
    save_run(session, Run(id=run_id, backend=backend, base="a" * 40, head=head, started_at=at,  # type: ignore[arg-type]
                          finished_at=at, conclusion="success", environments=envs))


def test_environments_and_verdicts_come_back_as_saved_and_a_resave_replaces_them(factory):
    with factory() as s:
        _run(s, "r", env=None)
        save_regression(s, "r", {"head": ENV, "base": {"name": "current"}}, VERDICTS)
        _run(s, "other", env=None)
        save_regression(s, "other", {"head": {"name": "x"}}, [VERDICTS[1]])
    with factory() as s:
        assert load_environments(s, "r") == {
            "head": ENV, "base": {"name": "current", "faults": None, "torch_version": None,
                                  "torch_git_version": None, "torch_wheel_sha256": None}}
        assert load_verdicts(s, "r") == VERDICTS  # insertion order, evidence and rule kept
        save_regression(s, "r", {"head": {"name": "current"}}, VERDICTS[1:])
    with factory() as s:
        assert list(load_environments(s, "r")) == ["head"] and load_verdicts(s, "r") == VERDICTS[1:]
        assert load_verdicts(s, "other") == [VERDICTS[1]]


def test_a_baseline_is_a_run_of_the_base_commit_on_this_backend_in_this_environment(factory):
    with factory() as s:
        _run(s, "old", minutes=1)
        _run(s, "new", minutes=3)
        _run(s, "other-commit", head="c" * 40, minutes=4)
        _run(s, "other-backend", backend="other-sim", minutes=5)
        _run(s, "other-env", env="torch==2.14.1", minutes=6)
        _run(s, "base-role-only", minutes=7, environments={"base": {"name": "current"}})
        _run(s, "no-env", env=None, minutes=8)
    with factory() as s:
        assert find_baseline(s, ref=BASE, env_name="current", backend="spyre-sim") == ["new", "old"]
        assert find_baseline(s, ref=BASE, env_name="current", backend="spyre-sim", limit=1) == ["new"]
        assert find_baseline(s, ref=BASE, env_name="torch==2.14.1", backend="spyre-sim") == ["other-env"]


def test_at_most_twenty_baselines_by_default(factory):
    with factory() as s:
        for n in range(22):
            _run(s, f"r{n:02d}", minutes=n)
    with factory() as s:
        found = find_baseline(s, ref=BASE, env_name="current", backend="spyre-sim")
    assert found == [f"r{n:02d}" for n in range(21, 1, -1)]
