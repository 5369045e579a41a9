"""A delivery's run on Celery, in two tasks that never wait for each other.

``start`` (the body of ``relay.process_delivery``): claim, fan out, and plan the local run
(``relay.pipeline.run.plan_run``: stages 1–3, base results reused from the store); then either
finish at once (nothing to execute) or send ONE chord — a shard task per slice of the head's
tests and of the base tests still missing — and return.  The delivery stays ``processing``.

``finish`` (the body of ``relay.finish_run``, the chord callback): read the shards' results from
``shard_results``, then ``relay.pipeline.run.finish_run`` — stage 4 (reruns in this process),
verdicts, culprit bisection (rounds in this process), and the run with its HUD outbox row and
the delivery's ``processed`` state in one transaction.  ``failed`` (``relay.run_failed``, the
chord's errback) marks the delivery ``failed`` with the shard's error, so no accepted delivery
stays ``processing`` when a shard gives up.

So a worker with one process at concurrency 1 finishes a delivery of any number of shards: no
task holds a process while waiting for others.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, chord

from relay.domain.delivery import DeliveryStatus
from relay.domain.run import Run
from relay.envs.environments import Environment, prepare
from relay.github.events import ParsedDelivery
from relay.logs import delivery_log
from relay.pipeline.local import LocalExecutors
from relay.pipeline.ports import ResultSink
from relay.pipeline.request import RunPlan
from relay.pipeline.run import execute, finish_run, plan_run
from relay.quarantine.policy import evaluate_safely
from relay.settings import Settings
from relay.store.deliveries import load_delivery, mark_delivery
from relay.store.leases import release
from relay.worker.celery.names import FINISH_RUN, RUN_FAILED
from relay.worker.celery.shards import load_execution, session_factory, shard_signatures
from relay.worker.celery.specs import spec_refs
from relay.worker.delivery import DeliveryWork, run_config
from relay.worker.job import AttemptResult, DeliveryJob, Outcome, Retry
from relay.worker.processing import DeliverySink, process_delivery

__all__ = ["start", "finish", "failed", "head_key", "base_key"]

log = logging.getLogger(__name__)


def head_key(run_id: str) -> str:
    """The ``shard_results`` key of a run's head execution."""
    return f"{run_id}-head"


def base_key(run_id: str) -> str:
    """The ``shard_results`` key of a run's base execution."""
    return f"{run_id}-base"


def _envs(plan: RunPlan, settings: Settings) -> tuple[Environment | None, Environment | None]:
    if not plan.regression:
        return None, None
    return (prepare(plan.request.head_env or "current", settings.state_dir),
            prepare(plan.base_env, settings.state_dir))


def _chord(app: Celery, settings: Settings, plan: RunPlan, note: str | None) -> Any:
    """The chord of a planned run: head and missing-base shards, then ``relay.finish_run``."""
    config = run_config(settings)
    specs = spec_refs(config.spec_paths)
    head_env, base_env = _envs(plan, settings)

    modes = plan.modes  # stage 3's mode per test: the shards run what select said

    def shards(key: str, ids: list[str], env: Environment | None) -> list[Any]:
        return shard_signatures(app, settings, key, ids, specs, device=config.device,
                                timeout_s=config.timeout_s, modes=modes,
                                env=None if env is None else env.env,
                                python=None if env is None else str(env.python))

    header = shards(head_key(plan.run_id), plan.to_run, head_env) \
        + shards(base_key(plan.run_id), plan.base_missing, base_env)
    body = app.signature(FINISH_RUN, args=(plan.model_dump(mode="json"), note))
    body = body.on_error(app.signature(RUN_FAILED, args=(plan.request.delivery_id,)))
    return chord(header, body, app=app)


def start(app: Celery, settings: Settings, delivery_id: str, *, retry: Retry | None = None) -> Outcome:
    """Process ``delivery_id`` up to its shards (see the module docstring); returns its outcome
    (``processing`` while the chord runs)."""
    sf = session_factory(settings.database_url)
    work = DeliveryWork(settings, sf)

    def processor(delivery: ParsedDelivery, s: Settings, sink: ResultSink) -> Run | AttemptResult | None:
        if work.rerun(delivery) or work.superseded(delivery, sink):
            return None
        request = work.request(delivery)
        if request is None:
            return None
        config = run_config(s)
        ports = work.ports(sink, LocalExecutors.for_config(config))
        plan = plan_run(request, config, ports)
        if not plan.to_run and not plan.base_missing:  # nothing to execute: finish here
            head, base = execute(plan, config, ports)
            return finish_run(plan, head, base, config, ports).run
        _chord(app, s, plan, getattr(sink, "note", None)).apply_async()
        delivery_log(log, delivery.id).info("run %s: %d + %d tests sent as shards", plan.run_id,
                                            len(plan.to_run), len(plan.base_missing))
        return AttemptResult.DEFERRED

    outcome = process_delivery(delivery_id, DeliveryJob(
        session_factory=sf, settings=settings, processor=processor, report=work.report,
        fanout=work.fanout, retry=retry, ignore=work.ignored))
    if outcome is DeliveryStatus.PROCESSING:  # the chord finishes it: no heartbeat from here on
        with sf() as session:
            release(session, delivery_id)
    return outcome


def finish(settings: Settings, plan_json: dict[str, Any], note: str | None) -> str:
    """Finish a planned run from its shards' results (see the module docstring); returns the
    delivery's final status."""
    plan = RunPlan.model_validate(plan_json)
    delivery_id = plan.request.delivery_id or ""
    dlog = delivery_log(log, delivery_id)
    sf = session_factory(settings.database_url)
    work = DeliveryWork(settings, sf)
    with sf() as session:
        delivery = load_delivery(session, delivery_id)
    if delivery is None:
        dlog.error("run %s finished for an unknown delivery", plan.run_id)
        return "unknown"
    sink = DeliverySink(delivery, sf, report=work.report, note=note)
    config = run_config(settings)
    try:
        head = load_execution(sf, head_key(plan.run_id), plan.to_run)
        base = load_execution(sf, base_key(plan.run_id), plan.base_missing)
        run = finish_run(plan, head, base, config, work.ports(sink, LocalExecutors.for_config(config))).run
    except Exception as exc:  # noqa: BLE001 - the delivery must end visibly
        dlog.exception("finishing run %s failed", plan.run_id)
        with sf() as session:
            mark_delivery(session, delivery_id, DeliveryStatus.FAILED,
                          f"{type(exc).__name__}: {exc}"[:10_000])
        return "failed"
    dlog.info("processed (run %s: %s)", run.id, run.conclusion)
    evaluate_safely(sf, settings)
    return "processed"


def failed(settings: Settings, delivery_id: str | None, error: str) -> None:
    """A shard of the delivery's run gave up: the delivery ends ``failed`` with ``error``."""
    if not delivery_id:
        return
    delivery_log(log, delivery_id).error("a shard failed: %s", error)
    with session_factory(settings.database_url)() as session:
        mark_delivery(session, delivery_id, DeliveryStatus.FAILED, f"shard failed: {error}"[:10_000])
