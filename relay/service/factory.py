"""The composition root of the service: ``create_app(settings, ...)`` builds one relay app.

This is where the pieces are chosen and wired — and the only place in the service that does:
the store (``RELAY_DATABASE_URL``), the task queue and executors (``relay.execution.registry``:
in-process, or Celery with ``RELAY_BROKER_URL``), the delivery work (``relay.worker.delivery``:
fan-out, local run, report), the dashboard sender (``relay.reporting.sender``: remote with
``RELAY_DASHBOARD_URL``, else straight into this relay's store), the outbox deliverer and the
background threads (``relay.service.lifecycle``).  Nothing below imports this module.

No global app object: ``relay serve`` calls ``create_app(get_settings())``; tests build as many
apps as they need.  ``build_state`` builds the app's parts in one step as a typed
``relay.service.state.RelayState`` (each part given what it needs, the allowlist source
included), and ``create_app`` attaches it once as the app's ``state``.

Without ``RELAY_ALLOWLIST`` the allowlist is the local backend alone at L2 (results on the
dashboard, nothing dispatched).  With one, the local backend runs only if it is listed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DataError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.allowlist import AllowlistProvider, allowlist_source
from relay.crcr.callbacks import CallbackContext
from relay.crcr.oidc import oidc_from_settings
from relay.crcr.outbox import Deliverer, github_handler, hud_handler
from relay.crcr.ratelimit import RateLimiter, storage_uri_for
from relay.crcr.shas import UpstreamCommits
from relay.crcr.sweeper import sweep_and_reconcile
from relay.domain.delivery import Delivery, DeliveryStatus
from relay.errors import DatabaseFileGone
from relay.execution.registry import task_queue_for
from relay.github.catchup import startup_catch_up
from relay.github.client import GitHubClient
from relay.reporting.sender import make_sender
from relay.service.headers import SecurityHeaders
from relay.service.intake import RelayApp
from relay.service.lifecycle import SHUTDOWN_GRACE_S, lifespan_for, recover_pending
from relay.service.metrics import Metrics, event_label
from relay.service.openapi import install_openapi
from relay.service.recovery import Recovery
from relay.service.routes import callback, dashboard, health, ingest, page, page_ops
from relay.service.state import RelayState
from relay.service.writer import DeliveryWriter
from relay.settings import Settings, get_settings
from relay.store.checkpoint import WalCheckpointer, background_checkpoints
from relay.store.db import create_schema, make_engine, make_session_factory
from relay.worker.delivery import DeliveryWork
from relay.worker.job import Processor
from relay.worker.queue import InProcessQueue, TaskQueue

__all__ = ["create_app", "build_state", "recover_pending", "SHUTDOWN_GRACE_S"]

log = logging.getLogger(__name__)

#: the pages' static files (``/static/refresh.js``: no inline script under the CSP)
STATIC_DIR = Path(__file__).resolve().parent / "static"


def _retry_later(queue_of: Callable[[], TaskQueue | None]) -> Callable[[str, float], None]:
    """``retry(delivery_id, delay_s)`` for the queue ``queue_of()`` returns when it is called."""

    def retry(delivery_id: str, delay_s: float) -> None:
        """Submit ``delivery_id`` again after ``delay_s``: into the in-process pool's schedule
        (started at that time by the first free thread), else by a daemon timer.  If the relay
        stops first, the row is still ``received`` and restart recovery submits it."""
        queue = queue_of()
        try:
            if isinstance(queue, InProcessQueue):
                queue.submit_later(delivery_id, delay_s)
                return
        except RuntimeError:  # queue closed: shutting down
            log.info("[delivery: %s] retry left to restart recovery", delivery_id)
            return

        def submit() -> None:
            try:
                current = queue_of()
                if current is not None:
                    current.submit_delivery(delivery_id)
            except RuntimeError:  # queue closed: shutting down
                log.info("[delivery: %s] retry left to restart recovery", delivery_id)

        timer = threading.Timer(delay_s, submit)
        timer.daemon = True
        timer.start()

    return retry


def _deliverer(settings: Settings, sf: sessionmaker[Session], allowlist: AllowlistProvider) -> Deliverer:
    """The outbox thread: HUD bodies, check runs and PR comments, with CRCR's zombie sweep and
    the demotion reconcile (which re-reads the allowlist through ``allowlist.refresh``)."""
    send, _close, _where = make_sender(settings, sf)

    def github() -> GitHubClient:
        return GitHubClient.from_settings(settings)

    return Deliverer(
        sf, {"hud": hud_handler(send), "check": github_handler(github, "check"),
             "comment": github_handler(github, "comment")},
        poll_s=settings.outbox_poll_s, backoff_s=settings.outbox_backoff_s,
        sweep=lambda: sweep_and_reconcile(sf, settings.job_timeout_s, allowlist.get,
                                          allowlist.refresh, github, settings.upstream_repo),
        sweep_interval_s=settings.sweep_interval_s)


def build_state(settings: Settings, *, processor: Processor | None = None,
                queue: TaskQueue | None = None, webhooks_enabled: bool = True,
                report: bool = True) -> RelayState:
    """Every part of one relay app, built in one step (arguments as ``create_app``'s).  Raises
    ``ConfigError`` when webhooks are enabled and no webhook secret is set, or when the
    allowlist or the OIDC provider map cannot be loaded."""
    secret = settings.require_webhook_secret() if webhooks_enabled else None
    engine = make_engine(settings.database_url)
    checkpointer = WalCheckpointer(engine) if background_checkpoints(engine) else None
    create_schema(engine)
    sf = make_session_factory(engine)
    metrics = Metrics()
    allowlist = allowlist_source(settings.allowlist, settings.backend,
                                 refresh_s=settings.allowlist_refresh_s)
    rate_limiter = RateLimiter(settings.callback_rate_per_min, 60.0,
                               storage_uri_for(settings.rate_limit_storage, settings.broker_url))
    callbacks = CallbackContext(allowlist.get, rate_limiter, UpstreamCommits(
        settings.upstream_repo, lambda: GitHubClient.from_settings(settings, attempts=1)))
    deliverer = _deliverer(settings, sf, allowlist) if webhooks_enabled else None
    work = DeliveryWork(settings, sf, processor=processor, allowlist=allowlist,
                        on_outbox=deliverer.kick if deliverer is not None else None)

    # the writer, recovery and retries look the factory and the queue up in the state when they
    # run (``state`` is bound below, before any of them runs), so a replaced one takes effect
    def session_factory() -> sessionmaker[Session]:
        return state.session_factory

    def current_queue() -> TaskQueue | None:
        return state.queue

    if webhooks_enabled:
        retry = _retry_later(current_queue)

        def finished(delivery: Delivery, status: DeliveryStatus) -> None:
            metrics.processed.labels(event_label(delivery.event), status).inc()

        def handle(delivery_id: str) -> None:
            work.process(delivery_id, retry=retry, report=report, on_finished=finished)

        def handle_many(ids: list[str], give_back: Callable[[list[str]], None]) -> None:
            work.process_many(ids, retry=retry, report=report, on_finished=finished,
                              give_back=give_back)

        queue = queue or task_queue_for(settings, handle, handle_many)
    state = RelayState(
        settings=settings, engine=engine, session_factory=sf, checkpointer=checkpointer,
        metrics=metrics, allowlist=allowlist, work=work, rate_limiter=rate_limiter,
        oidc=oidc_from_settings(settings), callbacks=callbacks, webhook_secret=secret,
        queue=queue if webhooks_enabled else None,
        writer=DeliveryWriter(session_factory) if webhooks_enabled else None,
        deliverer=deliverer,
        recovery=(Recovery(session_factory, current_queue, settings.recover_interval_s)
                  if webhooks_enabled else None),
        catchup=startup_catch_up(sf, settings) if webhooks_enabled else None)
    return state


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
    state = build_state(settings, processor=processor, queue=queue,
                        webhooks_enabled=webhooks_enabled, report=report)
    app = RelayApp(state, webhooks=webhooks_enabled, title="spyre-relay", lifespan=lifespan_for(
        recover=webhooks_enabled and recover, grace_s=shutdown_grace_s))

    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    async def database_gone(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s: %s", request.method, request.url.path, exc)
        return JSONResponse({"detail": f"database unavailable: {exc}"}, status_code=503)

    async def database_down(request: Request, exc: Exception) -> JSONResponse:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        log.error("%s %s: database unavailable: %s", request.method, request.url.path, first)
        return JSONResponse({"detail": f"database unavailable: {type(exc).__name__}"},
                            status_code=503)

    async def not_storable(request: Request, exc: Exception) -> JSONResponse:
        first = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
        log.warning("%s %s: a value the database refuses: %s", request.method, request.url.path, first)
        return JSONResponse({"detail": f"a value the database cannot store or compare: {first}"},
                            status_code=422)

    app.add_exception_handler(Exception, internal_error)
    # a value PostgreSQL refuses (a NUL in text, a string longer than its column): the caller's
    # input, answered 422 with the reason, never a 500
    app.add_exception_handler(DataError, not_storable)
    app.add_exception_handler(DatabaseFileGone, database_gone)
    # the server unreachable or gone mid-request (PostgreSQL restarting): 503 as /healthz says,
    # never a 500 that reads as a bug, and never a 2xx for something not stored
    app.add_exception_handler(OperationalError, database_down)
    app.add_exception_handler(InterfaceError, database_down)
    for module in (ingest, callback, dashboard, page, page_ops, health):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(SecurityHeaders)
    install_openapi(app, webhooks=webhooks_enabled)
    return app
