"""Real Redis + PostgreSQL + ``relay worker`` processes: two workers share one run's shards, and
a worker killed with SIGKILL in the middle of a shard does not lose or double-count a test."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from relay.settings import Settings as DistributedSettings
from relay.store import create_schema, make_engine, make_session_factory
from relay.store.shard_results import ShardResultRecord
from relay.worker.celery.executor import CeleryExecutor
from tests.distributed.conftest import SLOW_TEMPLATES, tiny_spec

pytestmark = pytest.mark.timeout(600)


def _rows(db_url: str, run_key: str) -> list[ShardResultRecord]:
    engine = make_engine(db_url)
    try:
        with make_session_factory(engine)() as s:
            return list(s.scalars(select(ShardResultRecord)
                                  .where(ShardResultRecord.run_key == run_key)))
    finally:
        engine.dispose()


def _settings(env: dict[str, str]) -> DistributedSettings:
    return DistributedSettings(database_url=env["RELAY_DATABASE_URL"],
                               broker_url=env["RELAY_BROKER_URL"],
                               celery_queue=env["RELAY_CELERY_QUEUE"],
                               shard_size=int(env["RELAY_SHARD_SIZE"]),
                               visibility_timeout_s=int(env["RELAY_VISIBILITY_TIMEOUT_S"]),
                               restore_interval_s=int(env["RELAY_RESTORE_INTERVAL_S"]),
                               result_wait_s=float(env["RELAY_RESULT_WAIT_S"]))


def _migrate(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    engine.dispose()


def test_two_workers_share_one_runs_shards(tmp_path: Path, dist_env, start_worker) -> None:
    spec = tmp_path / "tiny.yaml"
    ids = tiny_spec(spec, template="TestSlow::test_sleep")
    env = {**dist_env, "SPYRE_SPEC_TEMPLATES": SLOW_TEMPLATES, "SPYRE_TEST_SLEEP_S": "0.5"}
    _migrate(env["RELAY_DATABASE_URL"])
    a = start_worker(env, "a")
    b = start_worker(env, "b")
    seen = []
    execute = CeleryExecutor(_settings(env), [spec], device="spyre", timeout_s=60, reruns=0,
                             label="share", on_result=seen.append,
                             env={"SPYRE_SPEC_TEMPLATES": SLOW_TEMPLATES,
                                  "SPYRE_TEST_SLEEP_S": "0.5"})
    results = execute(ids)
    assert [r.id for r in results] == ids
    assert {r.outcome for r in results} == {"passed"}, [(r.id, r.outcome, r.message) for r in results]
    assert len(seen) == len(ids)
    rows = _rows(env["RELAY_DATABASE_URL"], execute.run_keys[0])
    assert sorted(r.test_id for r in rows) == ids
    assert all(r.writes == 1 for r in rows)
    by_worker = Counter(r.worker for r in rows)
    assert set(by_worker) == {a.name, b.name}, by_worker  # both did work
    assert len({r.shard for r in rows}) == 4  # 8 ids / RELAY_SHARD_SIZE 2


def test_kill9_mid_shard_run_completes_each_test_once(tmp_path: Path, dist_env, start_worker) -> None:
    spec = tmp_path / "tiny.yaml"
    ids = tiny_spec(spec, ops=["abs", "add", "cos", "exp", "mul", "neg"], template="TestSlow::test_sleep")
    env = {**dist_env, "RELAY_SHARD_SIZE": "3", "RELAY_VISIBILITY_TIMEOUT_S": "45"}
    _migrate(env["RELAY_DATABASE_URL"])
    a = start_worker(env, "victim")
    b = start_worker(env, "survivor")
    test_env = {"SPYRE_SPEC_TEMPLATES": SLOW_TEMPLATES, "SPYRE_TEST_SLEEP_S": "2"}
    execute = CeleryExecutor(_settings(env), [spec], device="spyre", timeout_s=60, reruns=0,
                             label="kill9", env=test_env)
    out: dict = {}
    runner = threading.Thread(target=lambda: out.update(results=execute(ids)), daemon=True)
    runner.start()
    deadline = time.monotonic() + 240
    while True:  # wait until the victim has recorded part (not all) of its shard
        assert time.monotonic() < deadline, "the victim never started a shard:\n" + a.log.read_text()[-3000:]
        keys = execute.run_keys
        rows = _rows(env["RELAY_DATABASE_URL"], keys[0]) if keys else []
        mine = [r for r in rows if r.worker == a.name]
        if mine:
            break
        time.sleep(0.05)
    victim_shard = mine[0].shard
    a.kill9()
    rows = _rows(env["RELAY_DATABASE_URL"], execute.run_keys[0])
    done_by_victim = {r.test_id for r in rows if r.worker == a.name}
    assert 0 < len(done_by_victim) < 3, "the kill did not land in the middle of the shard"
    runner.join(400)
    assert not runner.is_alive(), "the run did not complete after the kill:\n" + b.log.read_text()[-3000:]
    results = out["results"]
    assert [r.id for r in results] == ids
    assert {r.outcome for r in results} == {"passed"}, [(r.id, r.outcome, r.message) for r in results]
    rows = _rows(env["RELAY_DATABASE_URL"], execute.run_keys[0])
    assert sorted(r.test_id for r in rows) == ids  # every test exactly once (UNIQUE key)
    shard_rows = [r for r in rows if r.shard == victim_shard]
    assert {r.worker for r in shard_rows} == {a.name, b.name}  # redelivered to the survivor
    assert {r.test_id for r in shard_rows if r.worker == a.name} == done_by_victim
    assert "redelivered" in b.log.read_text() or len(shard_rows) == 3
