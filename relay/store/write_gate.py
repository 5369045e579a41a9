"""One writer at a time among a process's connections to one SQLite file, queued on a mutex.

SQLite admits one write transaction per database file.  A second writer gets ``SQLITE_BUSY``
and waits in SQLite's busy handler, which *sleeps* in steps of 1, 2, 5, 10, 15, 20, 25 … ms
(``sqliteDefaultBusyCallback``) and polls again: the lock is usually free after a fraction of a
millisecond, but the waiter sleeps on.  With the webhook writer thread (``relay.service.writer``)
and the in-process workers claiming and marking deliveries, those sleeps were most of the
intake's commit latency under load (``bench/intake.py``).

``WriteGate.attach(engine)`` makes the threads of this process queue on a ``threading.Lock``
instead: the first INSERT / UPDATE / DELETE / REPLACE (or DDL) of a transaction takes the gate,
and the transaction's end (commit, rollback, the pool resetting or discarding the connection)
releases it, so the next writer starts the moment the previous one commits.  Other processes
(``relay replay``, ``relay quarantine``) still meet SQLite's own lock and busy handler.

A writer that cannot take the gate within ``timeout_s`` (5 s, the ``busy_timeout``) goes on
without it and meets SQLite's lock as before — the gate only ever shortens waits, it never turns
a "database is locked" into a deadlock.  Reads never touch the gate (WAL readers do not block).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["WriteGate", "is_write", "gate_of"]

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")
_GATES: weakref.WeakKeyDictionary[Engine, WriteGate] = weakref.WeakKeyDictionary()


def is_write(statement: str) -> bool:
    """Whether SQL text starts with a statement that needs SQLite's write lock."""
    return statement.lstrip()[:7].upper().startswith(_WRITES)


class WriteGate:
    """The gate of one SQLite database in this process (one per engine).

    At most one connection holds the gate, so its state is that connection's id.  The gate is
    released *after* the DBAPI commit or rollback returns (the engine's dialect methods are
    wrapped: SQLAlchemy's ``commit`` event fires before the commit, which would hand the gate on
    while SQLite still holds its lock), and when the pool discards the connection."""

    def __init__(self, timeout_s: float = 5.0) -> None:
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._holder: int | None = None

    def attach(self, engine: Engine) -> WriteGate:
        """Hook the gate into ``engine`` (its statements, its dialect's commit and rollback, its
        pool's invalidate and close events); returns ``self``."""
        event.listen(engine, "before_cursor_execute", self._before_execute)
        dialect = engine.dialect
        dialect.do_commit = self._ending(dialect.do_commit)  # type: ignore[method-assign]
        dialect.do_rollback = self._ending(dialect.do_rollback)  # type: ignore[method-assign]
        for name in ("invalidate", "close", "close_detached"):
            event.listen(engine.pool, name, lambda dbapi_conn, *_: self._release(dbapi_conn))
        _GATES[engine] = self
        return self

    def _before_execute(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        key = id(conn.connection.dbapi_connection)
        if self._holder != key and is_write(statement):
            if self._lock.acquire(timeout=self.timeout_s):
                self._holder = key

    def _release(self, dbapi_conn: Any) -> None:
        if self._holder is not None and self._holder == id(dbapi_conn):
            self._holder = None
            self._lock.release()

    def _ending(self, end: Any) -> Any:
        def wrapped(dbapi_conn: Any) -> None:
            try:
                end(dbapi_conn)
            finally:
                self._release(getattr(dbapi_conn, "dbapi_connection", dbapi_conn))
        return wrapped


def gate_of(engine: Engine) -> WriteGate | None:
    """The gate attached to ``engine`` (``relay.store.db.make_engine`` attaches one to every
    SQLite file engine), or ``None``."""
    return _GATES.get(engine)
