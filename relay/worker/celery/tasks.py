"""The Celery tasks of the relay, registered on an app by ``register(app)``.

``relay.process_delivery(delivery_id)``
    called once per accepted webhook delivery (by ``CeleryQueue.submit_delivery``; again at
    relay startup for rows still ``received``).  Runs ``relay.worker.processing.process_delivery``
    — claim, fan-out, the local pipeline (whose executor is the ``CeleryExecutor``: shards go
    back to the broker), store, outbox row for the dashboard (the relay's deliverer sends it).
    A message redelivered after its worker died finds the row ``processing``: it is moved back
    to ``received`` first so the delivery is not lost.
``relay.run_shard(run_key, shard, ids, specs, device, timeout_s, reruns, env, python)``
    runs one shard's item ids with ``test_specs.runner.run_items`` in a local temporary
    directory, upserting each result into ``shard_results`` as it finishes; ids already
    recorded under ``run_key`` (by an earlier delivery of the same shard) are not run again.
    Returns the shard's results as JSON dicts, in ``ids`` order.
``relay.aggregate(shard_returns, run_key, ids)``
    the chord callback, called once after every shard of an execution succeeded: reads the
    results from the database (the source of truth, one row per test) and returns them in
    ``ids`` order; raises ``MissingResults`` if any id has no row.

Every task is late-acknowledged (see ``config.make_celery``), so all of them must be
idempotent — they are: claims are atomic, results are upserts keyed by (run_key, test_id).
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from celery import Celery
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from relay.worker.celery.config import DistributedSettings, as_distributed
from relay.worker.celery.specs import materialize
from relay.store.shard_results import load_results, record_results, recorded_ids
from test_specs.results import TestResult

__all__ = ["register", "MissingResults", "PROCESS_DELIVERY", "RUN_SHARD", "AGGREGATE"]

log = logging.getLogger(__name__)

PROCESS_DELIVERY = "relay.process_delivery"
RUN_SHARD = "relay.run_shard"
AGGREGATE = "relay.aggregate"

_factories: dict[str, sessionmaker[Session]] = {}


class MissingResults(RuntimeError):
    """An execution finished but some of its test ids have no recorded result."""


def session_factory(database_url: str) -> sessionmaker[Session]:
    """A per-process session factory for ``database_url``; the schema is migrated on first use
    (created after the pool forks, so no connection crosses a fork)."""
    sf = _factories.get(database_url)
    if sf is None:
        from relay.store import create_schema, make_engine, make_session_factory

        engine = make_engine(database_url)
        create_schema(engine)
        sf = _factories[database_url] = make_session_factory(engine)
    return sf


def _settings(app: Celery) -> DistributedSettings:
    settings = getattr(app.conf, "relay_settings", None)
    return as_distributed(settings) if settings is not None else DistributedSettings()


def run_shard(settings: DistributedSettings, run_key: str, shard: int, ids: list[str],
              specs: list[dict[str, Any]], *, device: str, timeout_s: float, reruns: int,
              env: dict[str, str] | None, python: str | None, worker: str) -> list[dict]:
    """The body of ``relay.run_shard`` (see the module docstring); usable without Celery."""
    from test_specs.runner import run_items

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
                                python=python)
        with sf() as session:  # results the runner made up (crashes, not collected) too
            record_results(session, run_key, [r for r in results if r.id not in streamed],
                           shard=shard, worker=worker)
    with sf() as session:
        got = load_results(session, run_key, ids)
    missing = [i for i in ids if i not in got]
    if missing:
        raise MissingResults(f"shard {shard} of {run_key}: {len(missing)} ids without a result")
    return [got[i].model_dump() for i in ids]


def aggregate(settings: DistributedSettings, run_key: str, ids: list[str]) -> list[dict]:
    """The body of ``relay.aggregate``: every id's stored result, in ``ids`` order."""
    with session_factory(settings.database_url)() as session:
        got = load_results(session, run_key, ids)
    missing = [i for i in ids if i not in got]
    if missing:
        raise MissingResults(f"{run_key}: {len(missing)} of {len(ids)} ids have no result, "
                             f"e.g. {missing[0]}")
    return [got[i].model_dump() for i in ids]


def _requeue_if_redelivered(sf: sessionmaker[Session], delivery_id: str, request: Any) -> None:
    info = getattr(request, "delivery_info", None) or {}
    if not (info.get("redelivered") or getattr(request, "redelivered", False)):
        return
    from relay.store.tables import DeliveryRecord

    with sf() as session:
        session.execute(update(DeliveryRecord)
                        .where(DeliveryRecord.delivery_id == delivery_id,
                               DeliveryRecord.status == "processing")
                        .values(status="received"))
        session.commit()
    log.warning("delivery %s redelivered by the broker: processing it again", delivery_id)


def register(app: Celery) -> dict[str, Any]:
    """Define the three tasks on ``app``; returns ``{name: task}``."""

    from sqlalchemy.exc import OperationalError

    # a database blip retries the shard (its finished tests are kept); other errors fail the chord
    @app.task(name=RUN_SHARD, bind=True, autoretry_for=(OperationalError,), max_retries=3,
              retry_backoff=2)
    def run_shard_task(self, run_key: str, shard: int, ids: list[str], specs: list[dict],
                       device: str = "spyre", timeout_s: float = 120, reruns: int = 2,
                       env: dict[str, str] | None = None, python: str | None = None) -> list[dict]:
        return run_shard(_settings(app), run_key, shard, ids, specs, device=device,
                         timeout_s=timeout_s, reruns=reruns, env=env, python=python,
                         worker=self.request.hostname or "")

    @app.task(name=AGGREGATE)
    def aggregate_task(shard_returns: list[Any], run_key: str, ids: list[str]) -> list[dict]:
        return aggregate(_settings(app), run_key, ids)

    @app.task(name=PROCESS_DELIVERY, bind=True)
    def process_delivery_task(self, delivery_id: str) -> str | None:
        from relay.worker.delivery import handle_delivery

        settings = _settings(app)
        sf = session_factory(settings.database_url)
        _requeue_if_redelivered(sf, delivery_id, self.request)
        return handle_delivery(delivery_id, settings, sf,  # transient failures: again, later
                               retry=lambda d, delay: self.apply_async((d,), countdown=delay))

    return {RUN_SHARD: run_shard_task, AGGREGATE: aggregate_task,
            PROCESS_DELIVERY: process_delivery_task}
