"""Shards: a list of item ids split over the workers, each shard one ``relay.run_shard`` task.

``shard_signatures`` makes the header of a chord for one execution (``run_key``): the ids are
split with the runner's deterministic ``shard_split`` into ceil(n / ``RELAY_SHARD_SIZE``)
shards.  ``run_shard`` is a shard task's body: it runs its ids in a local temporary directory
and upserts each result into ``shard_results`` as it finishes, skipping ids already recorded
under the same ``run_key`` (a redelivered shard).  ``load_execution`` reads an execution's
results back — the database is the source of truth, one row per (run key, test).

Nothing is shared on disk: the spec files travel in the messages (``relay.worker.celery.specs``).
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from relay.errors import MissingResults
from relay.settings import Settings
from relay.store.db import create_schema, make_engine, make_session_factory
from relay.store.durations import durations_from_db
from relay.store.shard_results import load_results, record_results, recorded_ids
from relay.worker.celery.names import RUN_SHARD
from relay.worker.celery.specs import materialize
from test_specs.run.runner import run_items, shard_split
from test_specs.values.planned import ModeRule
from test_specs.values.results import TestResult

__all__ = ["plan_shards", "shard_signatures", "run_shard", "load_execution", "session_factory"]

log = logging.getLogger(__name__)

_factories: dict[str, sessionmaker[Session]] = {}


def session_factory(database_url: str) -> sessionmaker[Session]:
    """A per-process session factory for ``database_url``; the schema is migrated on first use
    (created after the pool forks, so no connection crosses a fork)."""
    sf = _factories.get(database_url)
    if sf is None:
        engine = make_engine(database_url)
        create_schema(engine)
        sf = _factories[database_url] = make_session_factory(engine)
    return sf


def plan_shards(ids: Sequence[str], shard_size: int,
                durations: Mapping[str, float] | None = None) -> list[list[str]]:
    """``shard_split(ids, ceil(n / shard_size), durations)``: shards balanced by the stored
    seconds per test, so they end together; raises ``ValueError`` for duplicates or a size
    below 1."""
    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate item ids")
    return shard_split(list(ids), max(1, math.ceil(len(ids) / shard_size)), durations)


def shard_signatures(app: Celery, settings: Settings, run_key: str, ids: Sequence[str],
                     specs: list[dict[str, Any]], *, device: str, timeout_s: float, reruns: int = 2,
                     env: dict[str, str] | None = None, python: str | None = None,
                     modes: Mapping[str, ModeRule] | None = None) -> list[Any]:
    """One ``relay.run_shard`` signature per shard of ``ids`` (none for no ids), balanced by the
    durations stored in ``RELAY_DATABASE_URL``; each carries the run's mode of its own ids
    (``relay.pipeline.modes``) as JSON."""
    if not ids:
        return []
    modes = modes or {}
    return [app.signature(RUN_SHARD, args=(run_key, k, part, specs),
                          kwargs={"device": device, "timeout_s": timeout_s, "reruns": reruns,
                                  "env": env, "python": python,
                                  "modes": {i: modes[i].model_dump() for i in part if i in modes}})
            for k, part in enumerate(plan_shards(ids, settings.shard_size,
                                                 durations_from_db(settings.database_url)))]


def run_shard(settings: Settings, run_key: str, shard: int, ids: list[str],
              specs: list[dict[str, Any]], *, device: str, timeout_s: float, reruns: int,
              env: dict[str, str] | None, python: str | None, worker: str,
              modes: Mapping[str, dict[str, Any]] | None = None) -> list[dict]:
    """The body of ``relay.run_shard`` (see the module docstring); usable without Celery.
    ``modes``: ``{id: ModeRule as JSON}`` (``shard_signatures``).  Returns the shard's results
    as JSON dicts in ``ids`` order; raises ``ValueError`` for duplicate ids and
    ``MissingResults`` when an id ends without a result."""
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate item ids in shard")
    sf = session_factory(settings.database_url)
    with sf() as session:
        done = recorded_ids(session, run_key)
    todo = [i for i in ids if i not in done]
    if todo:
        log.info("shard %s/%d: running %d of %d ids (%d already recorded)", run_key, shard,
                 len(todo), len(ids), len(ids) - len(todo))
        streamed: set[str] = set()

        def record(result: TestResult) -> None:
            with sf() as session:
                record_results(session, run_key, [result], shard=shard, worker=worker)
            streamed.add(result.id)

        with tempfile.TemporaryDirectory(prefix=f"relay-shard-{shard}-") as tmp:
            paths = materialize(specs, Path(tmp) / "specs")
            results = run_items(todo, paths, workdir=Path(tmp) / "run", device=device,
                                reruns=reruns, timeout_s=timeout_s, env=env, on_result=record,
                                python=python,
                                modes={i: ModeRule.model_validate(m) for i, m in (modes or {}).items()})
        with sf() as session:  # results the runner made up (crashes, not collected) too
            record_results(session, run_key, [r for r in results if r.id not in streamed],
                           shard=shard, worker=worker)
    return [r.model_dump() for r in load_execution(sf, run_key, ids, what=f"shard {shard} of")]


def load_execution(sf: sessionmaker[Session], run_key: str, ids: Sequence[str], *,
                   what: str = "") -> list[TestResult]:
    """Every id's stored result under ``run_key``, in ``ids`` order; raises ``MissingResults``
    naming the first id without one."""
    with sf() as session:
        got = load_results(session, run_key, ids)
    missing = [i for i in ids if i not in got]
    if missing:
        raise MissingResults(f"{what} {run_key}: {len(missing)} of {len(ids)} ids have no result, "
                             f"e.g. {missing[0]}".strip())
    return [got[i] for i in ids]
