"""The composition root of the service: ``create_app(settings, ...)`` builds one relay app.

This is where the pieces are chosen and wired — and the only place in the service that does:
the store (``RELAY_DATABASE_URL``), the task queue and executors (``relay.execution.registry``:
in-process, or Celery with ``RELAY_BROKER_URL``), the delivery work (``relay.worker.delivery``:
fan-out, local run, report), the dashboard sender (``relay.reporting.sender``: remote with
``RELAY_DASHBOARD_URL``, else straight into this relay's store), the outbox deliverer and the
background threads (``relay.service.lifecycle``).  Nothing below imports this module.

No global app object: ``relay serve`` calls ``create_app(get_settings())``; tests build as many
apps as they need.  ``app.state`` holds ``settings``, ``webhook_secret``, ``engine``,
``session_factory``, ``metrics``, ``work`` (the ``DeliveryWork``), ``allowlist`` (a callable
returning the current ``Allowlist``), ``queue`` (a ``TaskQueue``), ``writer`` (the intake's
group commit), ``deliverer`` (the outbox thread), ``oidc``, ``rate_limiter`` and, once started,
``catchup`` (``relay.github.catchup.StartupCatchUp`` when ``RELAY_CATCHUP_HOOK_ID`` is set).

Without ``RELAY_ALLOWLIST`` the allowlist is the local backend alone at L2 (results on the
dashboard, nothing dispatched).  With one, the local backend runs only if it is listed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from relay.crcr.callbacks import CallbackContext
from relay.crcr.oidc import oidc_from_settings
from relay.crcr.outbox import Deliverer, github_handler, hud_handler
from relay.crcr.ratelimit import RateLimiter, storage_uri_for
from relay.crcr.shas import UpstreamCommits
from relay.crcr.sweeper import sweep_and_reconcile
from relay.domain.delivery import Delivery, DeliveryStatus
from relay.errors import DatabaseFileGone
from relay.execution.registry import task_queue_for
from relay.github.client import GitHubClient
from relay.reporting.sender import make_sender
from relay.service import intake
from relay.service.lifecycle import SHUTDOWN_GRACE_S, lifespan_for, recover_pending
from relay.service.metrics import Metrics, event_label
from relay.service.openapi import install_openapi
from relay.service.recovery import Recovery
from relay.service.routes import callback, dashboard, health, ingest, page, page_ops
from relay.service.writer import DeliveryWriter
from relay.settings import Settings, get_settings
from relay.store.checkpoint import WalCheckpointer, background_checkpoints
from relay.store.db import create_schema, make_engine, make_session_factory
from relay.worker.delivery import DeliveryWork
from relay.worker.job import Processor
from relay.worker.queue import InProcessQueue, TaskQueue

__all__ = ["create_app", "recover_pending", "SHUTDOWN_GRACE_S"]

log = logging.getLogger(__name__)


def _retry_later(app: FastAPI) -> Any:
    def retry(delivery_id: str, delay_s: float) -> None:
        """Submit ``delivery_id`` again after ``delay_s``: into the in-process pool's schedule
        (started at that time by the first free thread), else by a daemon timer.  If the relay
        stops first, the row is still ``received`` and restart recovery submits it."""
        queue = app.state.queue
        try:
            if isinstance(queue, InProcessQueue):
                queue.submit_later(delivery_id, delay_s)
                return
        except RuntimeError:  # queue closed: shutting down
            log.info("[delivery: %s] retry left to restart recovery", delivery_id)
            return

        def submit() -> None:
            try:
                app.state.queue.submit_delivery(delivery_id)
            except RuntimeError:  # queue closed: shutting down
                log.info("[delivery: %s] retry left to restart recovery", delivery_id)

        timer = threading.Timer(delay_s, submit)
        timer.daemon = True
        timer.start()

    return retry


def _deliverer(app: FastAPI, settings: Settings) -> Deliverer:
    """The outbox thread: HUD bodies, check runs and PR comments, with CRCR's zombie sweep."""
    sf = app.state.session_factory
    send, _close, _where = make_sender(settings, sf)

    def github() -> GitHubClient:
        return GitHubClient.from_settings(settings)

    return Deliverer(
        sf, {"hud": hud_handler(send), "check": github_handler(github, "check"),
             "comment": github_handler(github, "comment")},
        poll_s=settings.outbox_poll_s, backoff_s=settings.outbox_backoff_s,
        sweep=lambda: sweep_and_reconcile(
            sf, settings.job_timeout_s, app.state.allowlist,
            getattr(getattr(app.state.allowlist, "__self__", None), "refresh", None), github,
            settings.upstream_repo),
        sweep_interval_s=settings.sweep_interval_s)


def _wire_webhooks(app: FastAPI, settings: Settings, queue: TaskQueue | None, report: bool) -> None:
    """The intake, its writer, the task queue working deliveries, and the outbox deliverer."""
    state = app.state
    work: DeliveryWork = state.work
    metrics: Metrics = state.metrics
    retry = _retry_later(app)

    def finished(delivery: Delivery, status: DeliveryStatus) -> None:
        metrics.processed.labels(event_label(delivery.event), status).inc()

    def handle(delivery_id: str) -> None:
        work.process(delivery_id, retry=retry, report=report, on_finished=finished)

    def handle_many(ids: list[str], give_back: Callable[[list[str]], None]) -> None:
        work.process_many(ids, retry=retry, report=report, on_finished=finished,
                          give_back=give_back)

    state.queue = queue or task_queue_for(settings, handle, handle_many)
    # the factory is looked up per batch so a replaced app.state.session_factory takes effect
    state.writer = DeliveryWriter(lambda: app.state.session_factory)
    state.deliverer = _deliverer(app, settings)
    state.recovery = Recovery(lambda: app.state.session_factory, lambda: app.state.queue,
                              settings.recover_interval_s)
    app.intake = intake.WebhookIntake(state)


def create_app(
    settings: Settings | None = None,
    *,
    processor: Processor | None = None,
    queue: TaskQueue | None = None,
    webhooks_enabled: bool = True,
    recover: bool = True,
    report: bool = True,
    shutdown_grace_s: float = SHUTDOWN_GRACE_S,
) -> FastAPI:
    """Build the relay app.

    ``settings``: default ``get_settings()``.  ``processor``: replaces the local backend's run
    of a delivery (tests; default the pipeline in this process).  ``queue``: replaces the task
    queue (default ``relay.execution.registry.task_queue_for``).  ``webhooks_enabled=False``
    builds a dashboard-only app: no ``POST /webhooks/github``, no queue, no deliverer, no
    webhook secret needed.  ``recover``: re-submit pending deliveries at startup.  ``report``:
    write each run's HUD report to the outbox.  ``shutdown_grace_s``: how long shutdown waits,
    in all, for the delivery in hand and the background threads.
    Raises ``ConfigError`` when webhooks are enabled and no webhook secret is set, or when the
    allowlist cannot be loaded.
    """
    settings = settings or get_settings()
    secret = settings.require_webhook_secret() if webhooks_enabled else None
    engine = make_engine(settings.database_url)
    checkpointer = WalCheckpointer(engine) if background_checkpoints(engine) else None
    create_schema(engine)
    app = intake.RelayApp(title="spyre-relay", lifespan=lifespan_for(
        settings, checkpointer, recover=webhooks_enabled and recover, catch_up=webhooks_enabled,
        grace_s=shutdown_grace_s))
    state = app.state
    state.settings, state.webhook_secret, state.engine = settings, secret, engine
    state.session_factory = make_session_factory(engine)
    state.metrics = Metrics()
    state.queue = state.writer = state.deliverer = state.catchup = state.recovery = None
    state.work = DeliveryWork(
        settings, state.session_factory, processor=processor,
        on_outbox=lambda: state.deliverer.kick() if state.deliverer is not None else None)
    state.allowlist = state.work.allowlist
    state.rate_limiter = RateLimiter(settings.callback_rate_per_min, 60.0,
                                     storage_uri_for(settings.rate_limit_storage, settings.broker_url))
    state.oidc = oidc_from_settings(settings)
    state.callbacks = CallbackContext(state.allowlist, state.rate_limiter, UpstreamCommits(
        settings.upstream_repo, lambda: GitHubClient.from_settings(settings, attempts=1)))
    if webhooks_enabled:
        _wire_webhooks(app, settings, queue, report)

    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    async def database_gone(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s: %s", request.method, request.url.path, exc)
        return JSONResponse({"detail": f"database unavailable: {exc}"}, status_code=503)

    app.add_exception_handler(Exception, internal_error)
    app.add_exception_handler(DatabaseFileGone, database_gone)
    for module in (ingest, callback, dashboard, page, page_ops, health):
        app.include_router(module.router)
    install_openapi(app, webhooks=webhooks_enabled)
    return app
