"""The application factory: ``create_app(settings, processor=...)`` builds one relay app.

No global app object: ``relay serve`` calls ``create_app(get_settings())``; tests build as many
apps as they need.  ``app.state`` holds ``settings``, ``engine``, ``session_factory``,
``metrics``, ``queue`` (a ``TaskQueue``) and ``processor``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from relay.app import dashboard, health, ingest, webhooks
from relay.app.metrics import Metrics
from relay.app.processing import Processor, default_processor, process_delivery
from relay.github.webhooks import Delivery
from relay.models import Run
from relay.settings import Settings, get_settings
from relay.store import (
    create_schema,
    make_engine,
    make_session_factory,
    pending_deliveries,
    reset_stale_processing,
)
from relay.tasks import InProcessQueue, TaskQueue

__all__ = ["create_app", "recover_pending"]

log = logging.getLogger(__name__)

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

def create_app(
    settings: Settings | None = None,
    *,
    processor: Processor | None = None,
    queue: TaskQueue | None = None,
    webhooks_enabled: bool = True,
    recover: bool = True,
    report: bool = True,
) -> FastAPI:
    """Build the relay app.

    ``settings``: default ``get_settings()``.  ``processor``: what runs a delivery (default
    ``default_processor``).  ``queue``: default an ``InProcessQueue`` calling
    ``process_delivery``.  ``webhooks_enabled=False`` builds an app without
    ``POST /webhooks/github`` and without a queue (used to post HUD results in-process; no
    webhook secret needed).  ``recover``: re-submit pending deliveries at startup.
    ``report``: post each run's results to the dashboard after processing.
    Raises ``ConfigError`` when webhooks are enabled and no webhook secret is set.
    """
    settings = settings or get_settings()
    secret = settings.require_webhook_secret() if webhooks_enabled else None
    if webhooks_enabled and settings.broker_url and queue is None:
        log.warning("RELAY_BROKER_URL is set but no Celery queue exists yet; working in-process")
    engine = make_engine(settings.database_url)
    create_schema(engine)
    session_factory = make_session_factory(engine)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if webhooks_enabled and recover:
            await run_in_threadpool(recover_pending, app)
        yield
        if app.state.queue is not None:
            await run_in_threadpool(app.state.queue.close)
        engine.dispose()

    app = FastAPI(title="spyre-relay", lifespan=lifespan)
    app.state.settings = settings
    app.state.webhook_secret = secret
    app.state.engine = engine
    app.state.session_factory = session_factory
    app.state.metrics = metrics
    app.state.processor = processor or default_processor

    def _report(run: Run, delivery: Delivery) -> None:
        from relay.hud.client import post_results

        post_results(run, settings, event_type=delivery.event,
                     app=app if settings.dashboard_url is None else None)

    def _handle(delivery_id: str) -> None:
        process_delivery(delivery_id, session_factory=session_factory, settings=settings,
                         processor=app.state.processor, metrics=metrics,
                         report=_report if report else None)

    app.state.queue = (queue or InProcessQueue(_handle)) if webhooks_enabled else None

    async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    app.add_exception_handler(Exception, _internal_error)
    if webhooks_enabled:
        app.include_router(webhooks.router)
    app.include_router(ingest.router)
    app.include_router(dashboard.router)
    app.include_router(health.router)
    return app

