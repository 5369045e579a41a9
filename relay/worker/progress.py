"""``DeliveryProgress``: the pipeline's ``Progress`` port for a webhook run, written to the
``run_progress`` table (``relay.store.progress``) so the deliveries page shows a run while it
works — its phase, tests done of total, and the outcomes so far.

A write is made at each phase and at most every ``interval_s`` seconds (default 1 s) while tests
finish; a failed write is logged and dropped — progress must never fail a run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy.orm import Session

from relay.logs import delivery_log
from relay.pipeline.ports import Progress
from relay.store.progress import write_progress
from test_specs.values.results import TestResult

__all__ = ["DeliveryProgress"]

log = logging.getLogger(__name__)


class DeliveryProgress(Progress):
    """Progress of the run of delivery ``delivery_id`` (see the module docstring)."""

    def __init__(self, session_factory: Callable[[], Session], delivery_id: str, *,
                 interval_s: float = 1.0) -> None:
        self._sf = session_factory
        self.delivery_id = delivery_id
        self.interval_s = interval_s
        self.phase_name = "starting"
        self.total_tests = 0
        self.outcomes: dict[str, str] = {}  # test id -> its latest outcome
        self._last = 0.0
        self._restart = True

    def _write(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval_s:
            return
        self._last = now
        counts: dict[str, int] = {}
        for outcome in self.outcomes.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        try:
            with self._sf() as session:
                write_progress(session, self.delivery_id, phase=self.phase_name, total=self.total_tests,
                               done=len(self.outcomes), counts=counts, restart=self._restart)
            self._restart = False
        except Exception:  # noqa: BLE001 - progress is best effort
            delivery_log(log, self.delivery_id).warning("progress not recorded", exc_info=True)

    def phase(self, name: str) -> None:
        self.phase_name = name
        self._write(force=True)

    def count(self, name: str, done: int, total: int) -> None:
        self.phase_name = f"{name}: {done}/{total}"
        self._write(force=done >= total)

    def total(self, n: int) -> None:
        self.total_tests = n
        self._write(force=True)

    def result(self, result: TestResult) -> None:
        self.outcomes[result.id] = result.outcome
        self._write(force=len(self.outcomes) == self.total_tests)
