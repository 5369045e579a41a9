"""Shard results are keyed by (run key, test id): writing the same test twice (a re-delivered
shard) keeps one row; spec references, shard planning and the mode switches."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.store import create_schema, make_engine, make_session_factory
from relay.store.shard_results import load_results, record_results, recorded_ids
from relay.worker.celery.shards import plan_shards
from relay.worker.celery.specs import SpecRefError, materialize, spec_refs
from test_specs.values.results import TestResult


def _r(i: int, outcome: str = "passed") -> TestResult:
    return TestResult(id=f"s::T::t[op{i}-float16]", upstream="T::t", op=f"op{i}", dtype="float16",
                      outcome=outcome, duration_ms=1.5)


@pytest.fixture(params=["sqlite", "postgresql"])
def session_factory(request, tmp_path: Path):
    url = (f"sqlite:///{tmp_path / 'r.db'}" if request.param == "sqlite"
           else request.getfixturevalue("pg_url"))
    engine = make_engine(url)
    create_schema(engine)
    yield make_session_factory(engine)
    engine.dispose()


def test_redelivered_results_count_once(session_factory) -> None:
    with session_factory() as s:
        assert record_results(s, "run-1", [_r(0), _r(1)], shard=0, worker="a@x") == 2
    with session_factory() as s:  # the same shard again, another worker, a newer outcome
        record_results(s, "run-1", [_r(1, "failed"), _r(2)], shard=0, worker="b@x")
    with session_factory() as s:
        got = load_results(s, "run-1")
        assert sorted(got) == [_r(i).id for i in range(3)]
        assert got[_r(1).id].outcome == "failed"
        assert recorded_ids(s, "run-1") == set(got)
        assert load_results(s, "run-2") == {}
        from sqlalchemy import select

        from relay.store.shard_results import ShardResultRecord

        writes = {r.test_id: (r.writes, r.worker) for r in s.scalars(select(ShardResultRecord))}
        assert writes[_r(1).id] == (2, "b@x") and writes[_r(0).id] == (1, "a@x")


def test_empty_run_key_is_refused(session_factory) -> None:
    with session_factory() as s, pytest.raises(ValueError):
        record_results(s, "", [_r(0)])


def test_spec_refs_travel_without_a_shared_disk(tmp_path: Path) -> None:
    from test_specs.expand.universe import spec_paths_default

    own = tmp_path / "mine.yaml"
    own.write_text("test_suite_config: {files: []}\n")
    packaged = spec_paths_default()[0]
    refs = spec_refs([packaged, own])
    assert refs[0] == {"packaged": packaged.name}
    assert refs[1]["name"] == "mine.yaml" and "text" in refs[1]
    paths = materialize(refs, tmp_path / "elsewhere")
    assert paths[0] == packaged.resolve() and paths[1].name == "mine.yaml"
    assert paths[1].read_text() == own.read_text() and paths[1] != own
    with pytest.raises(SpecRefError):
        spec_refs([tmp_path / "missing.yaml"])
    with pytest.raises(SpecRefError):
        materialize([{"packaged": "nope.yaml"}], tmp_path)
    with pytest.raises(SpecRefError):
        materialize([{"name": "..", "text": ""}], tmp_path)


def test_plan_shards_is_deterministic_and_complete() -> None:
    ids = [f"id{k:02d}" for k in range(7)]
    shards = plan_shards(list(reversed(ids)), 3)
    assert len(shards) == 3 and sorted(sum(shards, [])) == ids
    assert shards == plan_shards(ids, 3)
    with pytest.raises(ValueError):
        plan_shards(ids + ["id00"], 3)
    with pytest.raises(ValueError):
        plan_shards(ids, 0)


def test_executors_are_celery_only_with_a_broker(tmp_path: Path, monkeypatch) -> None:
    from relay.execution.registry import executors_for
    from relay.settings import Settings
    from relay.worker.celery.executor import CeleryExecutor

    monkeypatch.delenv("RELAY_BROKER_URL", raising=False)
    spec = tmp_path / "s.yaml"
    spec.write_text("test_suite_config: {files: []}\n")
    local = executors_for(Settings(state_dir=tmp_path), [spec], timeout_s=5)(tmp_path / "w")
    assert not isinstance(local, CeleryExecutor)
    with_broker = Settings(broker_url="redis://127.0.0.1:6379/13", state_dir=tmp_path)
    assert isinstance(executors_for(with_broker, [spec], timeout_s=5)(tmp_path / "w"), CeleryExecutor)
    # the settings decide, not the process environment (the composition roots pass them)
    monkeypatch.setenv("RELAY_BROKER_URL", "redis://127.0.0.1:6379/13")
    without = Settings(broker_url=None, state_dir=tmp_path)
    assert not isinstance(executors_for(without, [spec], timeout_s=5)(tmp_path / "w"), CeleryExecutor)


def test_app_uses_the_celery_queue_with_a_broker(tmp_path: Path) -> None:
    from relay.service import create_app
    from relay.settings import Settings
    from relay.worker.celery.queue import CeleryQueue
    from relay.worker.queue import InProcessQueue, TaskQueue

    base = dict(webhook_secret="queue-test-secret-123", state_dir=tmp_path,
                database_url=f"sqlite:///{tmp_path / 'q.db'}")
    assert isinstance(create_app(Settings(**base), recover=False).state.queue, InProcessQueue)
    app = create_app(Settings(**base, broker_url="redis://127.0.0.1:6379/13"), recover=False)
    assert isinstance(app.state.queue, CeleryQueue) and isinstance(app.state.queue, TaskQueue)
    app.state.queue.close()
    with pytest.raises(RuntimeError):
        app.state.queue.submit_delivery("x")
