"""Start and stop of a relay app: background threads, restart recovery, the shutdown budget.

Startup (the app's lifespan): WAL checkpoints, the outbox deliverer, restart recovery
(``recover_pending``: deliveries still ``received`` are submitted again), then recovery while
serving (``relay.service.recovery.Recovery``, every ``RELAY_RECOVER_INTERVAL_S``) and — with
``RELAY_CATCHUP_HOOK_ID`` — the catch-up of webhooks GitHub failed to deliver meanwhile.
Shutdown gives all of it one budget of ``SHUTDOWN_GRACE_S``: a SIGTERM'd ``relay serve`` exits
within seconds instead of waiting for a pipeline run.  An abandoned delivery stays
``processing`` and is run again by restart recovery, as after a crash.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from relay.service.state import RelayState
from relay.store.deliveries import pending_deliveries, reset_stale_processing
from relay.worker.queue import InProcessQueue

__all__ = ["SHUTDOWN_GRACE_S", "lifespan_for", "recover_pending"]

log = logging.getLogger(__name__)

#: Seconds the app's shutdown gives, in all, the delivery in hand and the background threads
#: (intake writer, outbox, WAL checkpoints) before leaving them.
SHUTDOWN_GRACE_S = 1.5


def _state(app: FastAPI) -> RelayState:
    """The ``RelayState`` a relay app carries as its ``state`` (``relay.service.intake.RelayApp``)."""
    state = app.state
    assert isinstance(state, RelayState), "not an app built by relay.service.factory.create_app"
    return state


def recover_pending(app: FastAPI) -> list[str]:
    """Re-submit every delivery still ``received``.  With the in-process queue, interrupted
    ``processing`` rows are first reset to ``received`` (safe: its worker has not started yet;
    a shared broker's workers may still be busy, so they are left alone).  Called once at
    startup; returns the re-submitted ids (none for an app without a queue)."""
    state = _state(app)
    if state.queue is None:
        return []
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


def lifespan_for(*, recover: bool, grace_s: float) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The lifespan of an app built by ``relay.service.factory.create_app`` (its parts are the
    app's ``RelayState``); ``recover``: run restart recovery; ``grace_s``: the shutdown budget."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = _state(app)
        if state.checkpointer is not None:
            state.checkpointer.start()
        if state.deliverer is not None:
            state.deliverer.start()
        if recover:
            await run_in_threadpool(recover_pending, app)
            if state.recovery is not None:
                state.recovery.start()
        if state.catchup is not None and state.catchup.ident is None:  # a thread starts once
            state.catchup.start()
        yield
        if state.catchup is not None:
            state.catchup.cancel()
        deadline = time.monotonic() + grace_s  # one budget for the whole shutdown

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        for part in (state.writer, state.queue):  # the writer returns at once: no request in flight
            if part is not None:
                await run_in_threadpool(part.close, left())
        if state.recovery is not None:
            await run_in_threadpool(state.recovery.stop, left())
        if state.deliverer is not None:
            await run_in_threadpool(state.deliverer.stop, left())
        if state.checkpointer is not None:
            await run_in_threadpool(state.checkpointer.stop, left())
        state.engine.dispose()

    return lifespan
