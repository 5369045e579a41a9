"""``SqlRunStore``: the pipeline's ``RunStore`` port (``relay.pipeline.ports``) on the database.

One short session per call; writes go through ``retry_locked`` so minutes of test results are not
thrown away because another process holds SQLite's write lock for a moment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy.orm import Session

from relay.domain.run import Run
from relay.store.db import retry_locked
from relay.store.durations import test_durations
from relay.store.quarantine import quarantined_tests
from relay.store.regression import find_baseline, recent_outcomes
from relay.store.runs import load_run, save_run

__all__ = ["SqlRunStore"]


class SqlRunStore:
    """Reads a run's history from, and stores its side runs in, the database behind
    ``session_factory``."""

    def __init__(self, session_factory: Callable[[], Session]) -> None:
        self._sf = session_factory

    def durations(self) -> dict[str, float]:
        with self._sf() as session:
            return test_durations(session)

    def baseline_runs(self, *, ref: str, env_name: str, backend: str) -> list[Run]:
        with self._sf() as session:
            return [load_run(session, run_id)
                    for run_id in find_baseline(session, ref=ref, env_name=env_name, backend=backend)]

    def history(self, test_ids: Sequence[str]) -> dict[str, list[str]]:
        with self._sf() as session:
            return recent_outcomes(session, list(test_ids))

    def quarantined(self) -> dict[str, str]:
        with self._sf() as session:
            return quarantined_tests(session)

    def save(self, run: Run) -> None:
        def write() -> None:
            with self._sf() as session:
                save_run(session, run)

        retry_locked(write)
