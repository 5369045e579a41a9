"""Processing one delivery on a worker: the same steps the in-process queue runs.

``handle_delivery`` is called by the ``relay.process_delivery`` task, once per (re)delivered
message.  It composes the public pieces the app factory uses — the allowlist, the CRCR fan-out,
the L3 check gating, ``default_processor`` for the local backend, and the HUD outbox row written
in the run's transaction — around ``relay.worker.processing.process_delivery``.  The relay's
deliverer (in ``relay serve``) sends the outbox rows; the worker only writes them.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from relay.worker.processing import default_processor, process_delivery
from relay.crcr.allowlist import Allowlist, AllowlistSource
from relay.github.webhooks import Delivery
from relay.domain.run import Run
from relay.settings import Settings

__all__ = ["handle_delivery"]


def _allowlist(settings: Settings):
    if not settings.allowlist:
        fixed = Allowlist.local_only(settings.backend, "L2")
        return lambda: fixed
    return AllowlistSource(settings.allowlist, refresh_s=settings.allowlist_refresh_s).get


def handle_delivery(delivery_id: str, settings: Settings, sf: sessionmaker[Session],
                    retry: Callable[[str, float], None] | None = None) -> str | None:
    """Process the stored delivery ``delivery_id``; returns its final status (``None`` when it
    was not claimable).  Never raises for a pipeline error (recorded on the delivery row);
    ``retry(delivery_id, delay_s)`` schedules a transient failure again."""
    from relay.crcr.checks import on_labeled
    from relay.crcr.fanout import FanoutContext, fan_out
    from relay.github.client import GitHubClient
    from relay.reporting.hud import enqueue_result

    allowlist = _allowlist(settings)

    def level() -> str | None:
        entry = allowlist().get(settings.backend)
        return entry.level if entry is not None else None

    def local(delivery: Delivery, s: Settings) -> Run | None:
        return default_processor(delivery, s) if level() is not None else None

    def report(session: Session, run: Run, delivery: Delivery) -> None:
        enqueue_result(session, run, delivery, settings, level())

    ctx = FanoutContext(sf, settings, allowlist, lambda: GitHubClient.from_settings(settings))

    def fanout(delivery: Delivery) -> None:
        fan_out(delivery, ctx)
        on_labeled(delivery, sf)

    return process_delivery(delivery_id, session_factory=sf, settings=settings, processor=local,
                            report=report, fanout=fanout, retry=retry)
