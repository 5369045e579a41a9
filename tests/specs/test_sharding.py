"""All cores by default, and shards balanced by stored durations so they end together."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from relay.domain.run import Run
from relay.execution.registry import executors_for
from relay.pipeline.local import LocalExecutors
from relay.pipeline.request import RunConfig
from relay.settings import Settings
from relay.store.db import create_schema, make_engine, make_session_factory
from relay.store.runs import save_run
from relay.worker.celery.shards import plan_shards
from relay.worker.delivery import run_config
from test_specs.run.runner import (
    default_shards,
    expected_seconds,
    longest_first,
    run_items,
    shard_split,
    thread_env,
)
from test_specs.values.results import TestResult

TINY = "tiny_spec"


def test_default_shards_is_every_core_this_process_may_use() -> None:
    assert default_shards() == len(os.sched_getaffinity(0)) >= 1
    assert RunConfig(spec_paths=(), state_dir=Path(".")).shards == default_shards()
    assert LocalExecutors(()).shards == default_shards()


def test_workers_share_the_cores_instead_of_each_taking_all(monkeypatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert thread_env(4, {"A": "1"}) == {"A": "1", "OMP_NUM_THREADS": "2"}
    assert thread_env(16)["OMP_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in thread_env(1)  # one worker: torch's own default
    assert thread_env(4, {"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"  # the caller's wins
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert "OMP_NUM_THREADS" not in thread_env(4)  # inherited from this process


def test_duration_balanced_split_ends_the_shards_together() -> None:
    # one long test and many short ones: round-robin would put the long one with a third of the
    # short ones; LPT gives it a shard of its own and spreads the rest evenly
    ids = [f"s::T::t[op{i:02d}-float16]" for i in range(13)]
    durations = {ids[0]: 12.0, **{i: 1.0 for i in ids[1:]}}
    parts = shard_split(list(reversed(ids)), 3, durations)
    assert sorted(x for p in parts for x in p) == sorted(ids)
    loads = sorted(sum(durations[i] for i in p) for p in parts)
    assert loads == [6.0, 6.0, 12.0] and parts[0] == [ids[0]]
    assert parts == shard_split(ids, 3, durations)  # independent of input order
    # an unmeasured test counts as the median of the measured ones
    assert expected_seconds(["a", "b", "c"], {"a": 2.0, "b": 4.0}) == {"a": 2.0, "b": 4.0, "c": 4.0}
    assert longest_first(["a", "b", "c"], {"a": 2.0, "b": 4.0}) == ["b", "c", "a"]
    assert plan_shards(ids, 5, durations) == shard_split(ids, 3, durations)


def test_items_run_longest_first_when_durations_are_known(fixtures: Path, fault_templates: str,
                                                          tmp_path: Path) -> None:
    ids = [f"{TINY}::TestCommon::test_compare_cpu[add-float32]", f"{TINY}::TestFault::test_fail[abs-float32]",
           f"{TINY}::TestFault::test_refuse[sin-float32]"]
    durations = {ids[0]: 0.1, ids[1]: 0.2, ids[2]: 3.0}
    run_items(ids, [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "w", device="cpu", reruns=0, timeout_s=60,
              shards=1, env={"SPYRE_SPEC_TEMPLATES": fault_templates}, durations=durations)
    lines = [json.loads(ln) for ln in (tmp_path / "w" / "reportlog.jsonl").read_text().splitlines()]
    started = [r["nodeid"].split("::", 1)[1] for r in lines if r.get("when") == "setup"]
    assert started == [i.split("::", 1)[1] for i in (ids[2], ids[1], ids[0])]


def test_replay_and_webhook_executors_use_every_core_and_stored_durations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    engine = make_engine(url)
    create_schema(engine)
    now = datetime.now(UTC)
    result = TestResult(id="s::T::t[a-float16]", upstream="t", outcome="passed", duration_ms=2500.0)
    with make_session_factory(engine)() as session:
        save_run(session, Run(id="r1", base="a", head="b", started_at=now, finished_at=now,
                              conclusion="success", results=[result], selected=1))
    settings = Settings(database_url=url, state_dir=tmp_path / "state")
    local = executors_for(settings, [])
    assert isinstance(local, LocalExecutors) and local.shards == default_shards()
    assert local.durations is not None and local.durations() == {result.id: 2.5}
    assert executors_for(settings, [], shards=1).shards == 1  # an explicit --shards wins
    webhook = run_config(settings)
    assert webhook.shards == default_shards() and webhook.durations() == {result.id: 2.5}
