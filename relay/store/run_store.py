"""``SqlRunStore``: the pipeline's ``RunStore`` port (``relay.pipeline.ports``) on the database.

One short session per call; writes go through ``retry_locked`` so minutes of test results are not
thrown away because another process holds SQLite's write lock for a moment.  ``main_ref`` is the
upstream ref whose runs are trunk history (``RELAY_QUARANTINE_MAIN_REF``; the composition root
passes ``Settings.quarantine_main_ref``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlalchemy.orm import Session

from relay.domain.baseline import TrunkFound
from relay.domain.flakiness import QuarantineNote, TrunkResult
from relay.domain.run import Run
from relay.store.db import retry_locked
from relay.store.durations import test_durations
from relay.store.quarantine import quarantined_tests
from relay.store.regression import find_baseline, trunk_history
from relay.store.runs import load_run, save_run
from relay.store.trunk_baseline import trunk_results

__all__ = ["SqlRunStore"]


class SqlRunStore:
    """Reads a run's history from, and stores its side runs in, the database behind
    ``session_factory``."""

    def __init__(self, session_factory: Callable[[], Session], *,
                 main_ref: str = "refs/heads/main") -> None:
        self._sf = session_factory
        self.main_ref = main_ref

    def durations(self) -> dict[str, float]:
        with self._sf() as session:
            return test_durations(session)

    def baseline_runs(self, *, ref: str, env_name: str, backend: str) -> list[Run]:
        with self._sf() as session:
            return [load_run(session, run_id)
                    for run_id in find_baseline(session, ref=ref, env_name=env_name, backend=backend)]

    def history(self, test_ids: Sequence[str], *, backend: str, env_name: str,
                head: str | None) -> dict[str, list[TrunkResult]]:
        with self._sf() as session:
            return trunk_history(session, list(test_ids), main_ref=self.main_ref, backend=backend,
                                 env_name=env_name, head=head)

    def trunk(self, modes: Mapping[str, str], *, backend: str, base: str | None) -> TrunkFound:
        with self._sf() as session:
            return trunk_results(session, modes, main_ref=self.main_ref, backend=backend, base=base)

    def quarantined(self) -> dict[str, QuarantineNote]:
        with self._sf() as session:
            return quarantined_tests(session)

    def save(self, run: Run) -> None:
        def write() -> None:
            with self._sf() as session:
                save_run(session, run)

        retry_locked(write)
