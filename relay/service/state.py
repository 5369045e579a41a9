"""``RelayState``: everything one relay app holds, as one typed object.

Built in one step by the composition root (``relay.service.factory.build_state``) and attached
once, as the app's ``state`` (``relay.service.intake.RelayApp``: Starlette only ever assigns that
attribute, so ``request.app.state`` *is* this object).  Routes receive it through the typed
dependency ``relay.service.deps.StateDep``; the intake, the lifespan and the background threads
are given it when they are built.

The object is mutable on purpose, for tests only: replacing ``session_factory`` or ``queue``
takes effect everywhere, because the intake's writer, recovery and the retry schedule look them
up here when they run.  ``slots=True``: a misspelt attribute is an error, not a new field.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.allowlist import AllowlistProvider
from relay.crcr.callbacks import CallbackContext
from relay.crcr.oidc import OidcVerifier
from relay.crcr.outbox import Deliverer
from relay.crcr.ratelimit import RateLimiter
from relay.github.catchup import StartupCatchUp
from relay.service.metrics import Metrics
from relay.service.recovery import Recovery
from relay.service.writer import DeliveryWriter
from relay.settings import Settings
from relay.store.checkpoint import WalCheckpointer
from relay.worker.delivery import DeliveryWork
from relay.worker.queue import TaskQueue

__all__ = ["RelayState"]


@dataclass(slots=True, kw_only=True)
class RelayState:
    """One relay app's parts.

    Always: ``settings``; ``engine`` and ``session_factory`` (``RELAY_DATABASE_URL``);
    ``checkpointer`` (SQLite WAL checkpoints in the background, ``None`` elsewhere);
    ``metrics``; ``allowlist`` (its source: ``get()`` the current one, ``refresh()`` re-read
    now); ``work`` (fan-out, local run and report of deliveries); ``rate_limiter``, ``oidc``
    (``None``: no OIDC issuer configured) and ``callbacks`` for CRCR callbacks.

    Only when the app takes webhooks (else ``None``): ``webhook_secret``; ``queue`` (the
    ``TaskQueue`` working deliveries); ``writer`` (the intake's group commit); ``deliverer``
    (the outbox thread); ``recovery`` (re-runs what a failing part interrupted); ``catchup``
    (with ``RELAY_CATCHUP_HOOK_ID``: the catch-up thread the startup starts).
    """

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    checkpointer: WalCheckpointer | None
    metrics: Metrics
    allowlist: AllowlistProvider
    work: DeliveryWork
    rate_limiter: RateLimiter
    oidc: OidcVerifier | None
    callbacks: CallbackContext
    webhook_secret: str | None
    queue: TaskQueue | None
    writer: DeliveryWriter | None
    deliverer: Deliverer | None
    recovery: Recovery | None
    catchup: StartupCatchUp | None
