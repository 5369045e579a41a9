"""WAL checkpoints run off the commit path for a serving relay (relay.store.checkpoint)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlalchemy import text

from relay.store import create_schema, insert_deliveries, make_engine, make_session_factory
from relay.store.checkpoint import WalCheckpointer, background_checkpoints


def _rows(n: int, start: int = 0) -> list[dict]:
    return [dict(delivery_id=f"d-{start + i}", event="push", payload='{"x": "' + "y" * 20_000 + '"}')
            for i in range(n)]


def test_commits_leave_pages_in_the_wal_until_the_checkpointer_runs(tmp_path: Path) -> None:
    db = tmp_path / "relay.db"
    engine = make_engine(f"sqlite:///{db}")
    assert background_checkpoints(engine)
    create_schema(engine)
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA wal_autocheckpoint")).scalar() == 0
    factory = make_session_factory(engine)
    for batch in range(20):  # ~400 KB per batch: far past SQLite's 1,000-page autocheckpoint
        with factory() as session:
            insert_deliveries(session, _rows(20, batch * 20))
    wal = Path(f"{db}-wal")
    grown = wal.stat().st_size
    assert grown > 4_000_000  # nothing copied back on commit
    checkpointer = WalCheckpointer(engine, interval_s=0.05)
    busy, wal_pages, done = checkpointer.checkpoint()
    assert busy == 0 and done == wal_pages > 0
    checkpointer.start()
    checkpointer.stop()
    assert wal.stat().st_size == 0  # final TRUNCATE checkpoint
    engine.dispose()
    # every row is in the database file itself, read by a plain sqlite3 connection
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from deliveries").fetchone()[0] == 400


def test_other_databases_keep_their_defaults(tmp_path: Path) -> None:
    memory = make_engine("sqlite://")
    assert not background_checkpoints(memory)
    plain = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")  # a CLI engine: autocheckpoint on
    with plain.connect() as conn:
        assert conn.execute(text("PRAGMA wal_autocheckpoint")).scalar() == 1000
    plain.dispose()


def test_a_failing_checkpoint_is_reported_not_raised(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    background_checkpoints(engine)
    checkpointer = WalCheckpointer(engine)
    assert checkpointer.checkpoint("NOT A MODE") is None
    assert checkpointer.checkpoints == 0
    engine.dispose()
    assert os.path.exists(tmp_path / "x.db")


def test_the_wal_stays_bounded_under_sustained_writes_and_reads(tmp_path: Path) -> None:
    """Issue 31: writers committing without pause while readers keep read transactions open
    (the workers, the dashboard) — a passive checkpoint alone never lets the WAL start over, so
    its file grew with the whole burst; past ``restart_pages`` the checkpointer truncates it."""
    import threading
    import time

    db = tmp_path / "relay.db"
    engine = make_engine(f"sqlite:///{db}")
    background_checkpoints(engine)
    create_schema(engine)
    factory = make_session_factory(engine)
    stop, wal, sizes = threading.Event(), Path(f"{db}-wal"), []

    def read() -> None:  # overlapping read transactions, as a busy relay's readers
        with sqlite3.connect(db) as conn:
            while not stop.is_set():
                conn.execute("BEGIN")
                conn.execute("select count(*) from deliveries").fetchone()
                time.sleep(0.01)
                conn.execute("COMMIT")

    readers = [threading.Thread(target=read, daemon=True) for _ in range(2)]
    for r in readers:
        r.start()
    checkpointer = WalCheckpointer(engine, interval_s=0.02, restart_pages=500)  # ~2 MB
    checkpointer.start()
    for batch in range(60):  # ~24 MB written in all
        with factory() as session:
            insert_deliveries(session, _rows(20, batch * 20))
        sizes.append(wal.stat().st_size)
    stop.set()
    for r in readers:
        r.join(5)
    # once the writers pause, the checkpointer starts the WAL over; without TRUNCATE
    # checkpoints it would keep all ~24 MB written (a loaded machine delays it: 12.5 and 20.7 MB
    # peaks seen at load 8, so the peak is no bound; poll, 30 s at most)
    deadline = time.monotonic() + 30
    while wal.stat().st_size >= 4_000_000 and time.monotonic() < deadline:
        time.sleep(0.1)
    settled = wal.stat().st_size
    checkpointer.stop()
    engine.dispose()
    assert checkpointer.truncations > 0
    assert settled < 4_000_000, (settled, max(sizes))
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from deliveries").fetchone()[0] == 1200
