"""One SQLite file per engine, for the life of the process: connections never open another one.

A serving relay whose database file is moved or deleted must refuse to store anything (HTTP
503): SQLite keeps writing into the open, unlinked inode, and everything written would vanish at
restart.  Checking only that *a* file exists at the path is not enough — the next connection
opened by the pool (the dashboard, a worker) *creates* an empty file there, and a pooled
connection to the moved file then passes the check and commits rows nobody will ever read
(found by an adversarial pass: a 202 for a delivery stored nowhere; both files also share one
``-wal`` name, a corruption risk).

``creator_for(path)`` gives ``create_engine`` a ``creator`` that remembers the file's identity
(device, inode) at its first connection and afterwards opens only that same
file, read-write and never creating it (``file:…?mode=rw``); after ``remember(engine, record)``,
``check(engine)`` raises ``DatabaseFileGone`` when the path no longer names that file, and
``guard(engine)`` makes every statement and every commit of the engine run that check first
(one ``stat``, ~1 µs), so no write route — webhook, callback, ingest — commits into a deleted
file and answers 2xx, and no read serves a database that is gone (the app answers 503).
"""

from __future__ import annotations

import os
import sqlite3
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, event

from relay.errors import DatabaseFileGone

__all__ = ["creator_for", "remember", "check", "guard"]

_IDENTITY: weakref.WeakKeyDictionary[Engine, _File] = weakref.WeakKeyDictionary()


class _File:
    def __init__(self, path: str) -> None:
        self.path = path
        self.identity: tuple[int, int] | None = None

    def current(self) -> tuple[int, int]:
        """``(st_dev, st_ino)`` of the path; raises ``DatabaseFileGone`` when it is not the file
        first opened (moved, deleted, replaced)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise DatabaseFileGone(f"SQLite database file {self.path} was removed") from None
        found = (st.st_dev, st.st_ino)
        if self.identity is not None and found != self.identity:
            raise DatabaseFileGone(f"SQLite database file {self.path} was replaced by another "
                                   "file (moved or deleted and re-created)")
        return found

    def connect(self) -> sqlite3.Connection:
        if self.identity is None:  # the first connection may create the file
            conn = sqlite3.connect(self.path, check_same_thread=False)
            self.identity = self.current()
            return conn
        self.current()
        return sqlite3.connect(f"file:{quote(self.path)}?mode=rw", uri=True,
                               check_same_thread=False)


def creator_for(path: str) -> tuple[Any, _File]:
    """A ``create_engine(creator=…)`` callable for the SQLite file ``path`` and its record."""
    record = _File(str(Path(path).expanduser()))
    return record.connect, record


def remember(engine: Engine, record: _File) -> None:
    """Tie ``record`` (from ``creator_for``) to ``engine`` for ``check``."""
    _IDENTITY[engine] = record


def check(engine: Engine) -> None:
    """Raise ``DatabaseFileGone`` when ``engine``'s SQLite file is no longer at its path (one
    ``stat``); nothing for other engines."""
    record = _IDENTITY.get(engine)
    if record is not None:
        record.current()


def guard(engine: Engine) -> None:
    """Check ``engine``'s file (``check``) before each statement and before each commit;
    ``DatabaseFileGone`` raised there aborts the statement or the commit (the transaction is
    rolled back by its owner).  Needs ``remember(engine, …)`` first."""
    record = _IDENTITY[engine]

    def _statement(*_args: Any) -> None:
        record.current()

    def _commit(_conn: Any) -> None:
        record.current()

    event.listen(engine, "before_cursor_execute", _statement)
    event.listen(engine, "commit", _commit)
