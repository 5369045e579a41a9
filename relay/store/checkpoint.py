"""WAL checkpoints off the commit path, for the SQLite database of a serving relay.

In WAL mode SQLite appends committed pages to ``<db>-wal``; by default the connection whose
commit pushes the WAL past 1,000 pages copies them back into the database file right there
(an automatic checkpoint: ``pwrite`` of every page plus an ``fdatasync``), so one webhook's
commit in every few dozen pays for everyone's.  On the bench machine that made 17 % of the
intake writer's time and the p99 of ``POST /webhooks/github`` (``bench/intake.py``).

``background_checkpoints(engine)`` turns the automatic checkpoint off on every connection of
``engine`` (``PRAGMA wal_autocheckpoint=0``); a ``WalCheckpointer`` thread then runs
``PRAGMA wal_checkpoint(PASSIVE)`` every ``interval_s`` seconds.  A passive checkpoint never
blocks writers or readers (SQLite docs, "Write-Ahead Logging" §"Checkpointing"), so commits only
append to the WAL.  Durability is unchanged: with ``synchronous=NORMAL`` a committed
transaction is in the WAL and survives a process crash whether or not it was checkpointed.
On ``stop`` a final ``TRUNCATE`` checkpoint empties the WAL file.

Under sustained load a passive checkpoint is not enough (issue 31: a 100/s burst grew the file to
551 MB, 64 KB per delivery against 20 KB at 20/s): it copies pages back, but the WAL only starts
over from its beginning when a writer finds it fully checkpointed *and* no reader still using
it — with the workers and the dashboard reading all the time that rarely happens, so the WAL
file grows for as long as the burst lasts.  So when a tick finds the WAL past
``restart_pages`` (default 4,096 pages, 16 MB at 4 KB pages), it runs a ``TRUNCATE``
checkpoint: SQLite waits (the 5 s ``busy_timeout``) until readers have moved to the database
file, then resets the WAL to zero bytes; writers wait for that moment only.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["background_checkpoints", "WalCheckpointer"]

log = logging.getLogger(__name__)


def background_checkpoints(engine: Engine) -> bool:
    """Disable automatic WAL checkpoints on ``engine``'s connections (SQLite files only).

    Returns ``True`` when applied (a ``WalCheckpointer`` must then run), ``False`` for other
    databases, where nothing changes.  Call before the engine's first connection.
    """
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return False

    @event.listens_for(engine, "connect")
    def _no_autocheckpoint(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA wal_autocheckpoint=0")
        cur.close()

    return True


class WalCheckpointer:
    """A daemon thread checkpointing ``engine``'s WAL every ``interval_s`` seconds (passive;
    ``TRUNCATE`` past ``restart_pages`` WAL pages).

    ``start`` and ``stop`` are idempotent; a failing checkpoint is logged and retried on the
    next tick (the WAL only grows meanwhile; nothing is lost).
    """

    def __init__(self, engine: Engine, interval_s: float = 0.5, restart_pages: int = 4096) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self.restart_pages = restart_pages
        self.truncations = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="relay-wal-checkpoint",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, then checkpoint once more in ``TRUNCATE`` mode."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout)
        self._thread = None
        self.checkpoint("TRUNCATE")

    def checkpoint(self, mode: str = "PASSIVE") -> tuple[int, int, int] | None:
        """One ``PRAGMA wal_checkpoint(mode)``: ``(busy, wal_pages, checkpointed_pages)``, or
        ``None`` when it failed (logged)."""
        try:
            with self._engine.connect() as conn:
                row = conn.exec_driver_sql(f"PRAGMA wal_checkpoint({mode})").one()
                conn.commit()
        except Exception:  # noqa: BLE001 - the next tick tries again
            log.warning("WAL checkpoint (%s) failed", mode, exc_info=True)
            return None
        self.checkpoints += 1
        return int(row[0]), int(row[1]), int(row[2])

    def tick(self) -> None:
        """One passive checkpoint, then a ``TRUNCATE`` one when the WAL is past
        ``restart_pages`` (module docstring)."""
        done = self.checkpoint()
        if done is not None and done[1] >= self.restart_pages:
            if self.checkpoint("TRUNCATE") is not None:
                self.truncations += 1

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.tick()
