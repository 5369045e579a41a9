"""The application factory: ``create_app(settings, processor=...)`` builds one relay app.

No global app object: ``relay serve`` calls ``create_app(get_settings())``; tests build as many
apps as they need.  ``app.state`` holds ``settings``, ``engine``, ``session_factory``,
``metrics``, ``queue`` (a ``TaskQueue``), ``processor``, ``allowlist`` (a callable returning
the current ``Allowlist``), ``deliverer`` (the outbox thread, started with the lifespan),
``oidc`` (``OidcVerifier`` or ``None``), ``rate_limiter`` and, once started, ``catchup``
(the ``relay.github.catchup.StartupCatchUp`` thread when ``RELAY_CATCHUP_HOOK_ID`` is set, else ``None``).

Without ``RELAY_ALLOWLIST`` the allowlist is the local backend alone at L2 (results on the
dashboard, nothing dispatched).  With one, the local backend runs only if it is listed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from relay.service import intake as webhooks
from relay.service.routes import callback, dashboard, health, ingest, page
from relay.service.metrics import Metrics
from relay.github.catchup import start_catch_up
from relay.crcr.allowlist import Allowlist, AllowlistSource
from relay.crcr.checks import on_labeled
from relay.crcr.fanout import FanoutContext, fan_out
from relay.crcr.outbox import Deliverer, github_handler, hud_handler
from relay.crcr.ratelimit import RateLimiter, storage_uri_for
from relay.crcr.sweeper import sweep
from relay.crcr.tokens import OidcVerifier
from relay.github.client import GitHubClient
from relay.service.writer import DeliveryWriter
from relay.store.checkpoint import WalCheckpointer, background_checkpoints
from relay.worker.processing import Processor, default_processor, process_delivery
from relay.github.webhooks import Delivery
from relay.reporting.hud import enqueue_result, make_sender
from relay.domain.run import Run
from sqlalchemy.orm import Session
from relay.settings import Settings, get_settings
from relay.store import (
    create_schema,
    make_engine,
    make_session_factory,
    pending_deliveries,
    reset_stale_processing,
)
from relay.worker.queue import InProcessQueue, TaskQueue

__all__ = ["create_app", "recover_pending", "SHUTDOWN_GRACE_S"]

log = logging.getLogger(__name__)

#: Seconds the app's shutdown gives, in all, the delivery in hand and the background threads
#: (intake writer, outbox, WAL checkpoints) before leaving them: a SIGTERM'd ``relay serve``
#: exits within a few seconds instead of waiting for a pipeline run.  An abandoned delivery
#: stays ``processing`` and is run again by restart recovery (``recover_pending``), as after
#: a crash.
SHUTDOWN_GRACE_S = 1.5

def recover_pending(app: FastAPI) -> list[str]:
    """Re-submit every delivery still ``received``.  With the in-process queue, interrupted
    ``processing`` rows are first reset to ``received`` (safe: its worker has not started yet;
    a shared broker's workers may still be busy, so they are left alone).  Called once at
    startup; returns the re-submitted ids."""
    state = app.state
    with state.session_factory() as session:
        reset = reset_stale_processing(session) if isinstance(state.queue, InProcessQueue) else 0
        ids = pending_deliveries(session)
    if reset:
        log.warning("%d interrupted deliveries reset to received", reset)
    for delivery_id in ids:
        state.queue.submit_delivery(delivery_id)
    if ids:
        log.info("restart recovery: re-submitted %d deliveries", len(ids))
    return ids

def _allowlist(settings: Settings) -> Callable[[], Allowlist]:
    """The current-allowlist callable; raises ``AllowlistError`` when the first load fails."""
    if not settings.allowlist:
        fixed = Allowlist.local_only(settings.backend, "L2")
        return lambda: fixed
    return AllowlistSource(settings.allowlist, refresh_s=settings.allowlist_refresh_s).get


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

    ``settings``: default ``get_settings()``.  ``processor``: what runs a delivery (default
    ``default_processor``).  ``queue``: default an ``InProcessQueue`` calling
    ``process_delivery``.  ``webhooks_enabled=False`` builds an app without
    ``POST /webhooks/github`` and without a queue (used to post HUD results in-process; no
    webhook secret needed).  ``recover``: re-submit pending deliveries at startup.
    ``report``: post each run's results to the dashboard after processing.
    ``shutdown_grace_s``: how long shutdown waits, in all, for the delivery in hand and the
    background threads (see ``SHUTDOWN_GRACE_S``).
    Raises ``ConfigError`` when webhooks are enabled and no webhook secret is set.
    """
    settings = settings or get_settings()
    secret = settings.require_webhook_secret() if webhooks_enabled else None
    if webhooks_enabled and settings.broker_url and queue is None:
        from relay.worker.celery.queue import CeleryQueue  # workers (`relay worker`) do the work

        queue = CeleryQueue(settings)
    allowlist = _allowlist(settings)
    engine = make_engine(settings.database_url)
    checkpointer = WalCheckpointer(engine) if background_checkpoints(engine) else None
    create_schema(engine)
    session_factory = make_session_factory(engine)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if checkpointer is not None:
            checkpointer.start()
        if app.state.deliverer is not None:
            app.state.deliverer.start()
        if webhooks_enabled and recover:
            await run_in_threadpool(recover_pending, app)
        # RELAY_CATCHUP_HOOK_ID: redeliver what GitHub failed to deliver (background, logged)
        app.state.catchup = start_catch_up(session_factory, settings) if webhooks_enabled else None
        yield
        if app.state.catchup is not None:
            app.state.catchup.cancel()
        deadline = time.monotonic() + shutdown_grace_s  # one budget for the whole shutdown

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        if app.state.writer is not None:  # no request is in flight any more: returns at once
            await run_in_threadpool(app.state.writer.close, left())
        if app.state.queue is not None:
            await run_in_threadpool(app.state.queue.close, left())
        if app.state.deliverer is not None:
            await run_in_threadpool(app.state.deliverer.stop, left())
        if checkpointer is not None:
            await run_in_threadpool(checkpointer.stop, left())
        engine.dispose()

    app = webhooks.RelayApp(title="spyre-relay", lifespan=lifespan)
    app.state.settings = settings
    app.state.webhook_secret = secret
    app.state.engine = engine
    app.state.session_factory = session_factory
    app.state.metrics = metrics
    app.state.processor = processor or default_processor
    app.state.allowlist = allowlist
    app.state.deliverer = None
    app.state.catchup = None
    app.state.rate_limiter = RateLimiter(
        settings.callback_rate_per_min, 60.0,
        storage_uri_for(settings.rate_limit_storage, settings.broker_url))
    app.state.oidc = (OidcVerifier(settings.oidc_jwks_url, settings.oidc_issuer,
                                   settings.oidc_audience) if settings.oidc_jwks_url else None)

    def _github() -> GitHubClient:
        return GitHubClient.from_settings(settings)

    def _local_level() -> str | None:
        entry = allowlist().get(settings.backend)
        return entry.level if entry is not None else None

    def _report(session: Session, run: Run, delivery: Delivery) -> None:
        if enqueue_result(session, run, delivery, settings, _local_level()):
            wrote.set()

    def _local(delivery: Delivery, s: Settings) -> Run | None:
        if _local_level() is None:
            return None
        return app.state.processor(delivery, s)

    fanout_ctx = FanoutContext(session_factory, settings, allowlist, _github)

    def _fanout(delivery: Delivery) -> None:
        fan_out(delivery, fanout_ctx)
        if on_labeled(delivery, session_factory):
            wrote.set()

    wrote = threading.Event()  # set when the worker wrote outbox rows: wake the deliverer

    def _retry_later(delivery_id: str, delay_s: float) -> None:
        """Submit ``delivery_id`` again after ``delay_s`` (a daemon timer); if the relay stops
        first, the row is still ``received`` and restart recovery submits it."""
        def submit() -> None:
            try:
                app.state.queue.submit_delivery(delivery_id)
            except RuntimeError:  # queue closed: shutting down
                log.info("delivery %s: retry left to restart recovery", delivery_id)

        timer = threading.Timer(delay_s, submit)
        timer.daemon = True
        timer.start()

    def _handle(delivery_id: str) -> None:
        wrote.clear()
        process_delivery(delivery_id, session_factory=session_factory, settings=settings,
                         processor=_local, metrics=metrics,
                         report=_report if report else None,
                         fanout=_fanout if webhooks_enabled else None, retry=_retry_later)
        if wrote.is_set() and app.state.deliverer is not None:
            app.state.deliverer.kick()

    app.state.queue = (queue or InProcessQueue(_handle)) if webhooks_enabled else None
    # the factory is looked up per batch so a replaced app.state.session_factory takes effect
    app.state.writer = (DeliveryWriter(lambda: app.state.session_factory())
                        if webhooks_enabled else None)
    app.state.deliverer = None
    if webhooks_enabled:
        send, _close, _url = make_sender(settings, app)
        app.state.deliverer = Deliverer(
            session_factory,
            {"hud": hud_handler(send), "check": github_handler(_github, "check"),
             "comment": github_handler(_github, "comment")},
            poll_s=settings.outbox_poll_s, backoff_s=settings.outbox_backoff_s,
            sweep=lambda: sweep(session_factory, settings.job_timeout_s),
            sweep_interval_s=settings.sweep_interval_s)

    async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    app.add_exception_handler(Exception, _internal_error)
    if webhooks_enabled:
        app.intake = webhooks.WebhookIntake(app.state)
    app.include_router(ingest.router)
    app.include_router(callback.router)
    app.include_router(dashboard.router)
    app.include_router(page.router)
    app.include_router(health.router)
    return app

