"""``StoreAndReport``: the ``ResultSink`` (``relay.pipeline.ports``) of a replay — the run is
stored, then its HUD body is posted to the dashboard (remote, or straight into this relay's
store when ``RELAY_DASHBOARD_URL`` is unset)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.orm import Session

from relay.domain.run import Run
from relay.reporting.sender import post_results
from relay.settings import Settings
from relay.store.run_store import SqlRunStore

__all__ = ["StoreAndReport"]

log = logging.getLogger(__name__)


class StoreAndReport:
    """Store the run through ``store``; post it (event type ``replay`` for replays).  A failed
    post is logged and returned (the run is stored; a later replay or the dashboard shows it)."""

    def __init__(self, store: SqlRunStore, settings: Settings,
                 session_factory: Callable[[], Session], *, report: bool = True) -> None:
        self.store = store
        self.settings = settings
        self.session_factory = session_factory
        self.report = report

    def accept(self, run: Run) -> str | None:
        self.store.save(run)
        if not self.report:
            return None
        try:
            post_results(run, self.settings, session_factory=self.session_factory,
                         event_type="replay" if run.trigger == "replay" else None)
        except Exception as exc:  # noqa: BLE001 — the run is stored; reporting is best effort here
            log.error("posting run %s to the dashboard failed: %s", run.id, exc)
            return str(exc)
        return None
