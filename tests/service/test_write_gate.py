"""``relay.store.write_gate``: this process's SQLite writers queue on one mutex, taken by a
transaction's first write and released when its commit or rollback has returned."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import text

from relay.store import make_engine
from relay.store.write_gate import WriteGate, gate_of, is_write


@pytest.fixture
def engine(tmp_path):
    eng = make_engine(f"sqlite:///{tmp_path / 'g.db'}")
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE t (v INTEGER)"))
    yield eng
    eng.dispose()


def _gate(engine) -> WriteGate:
    gate = gate_of(engine)
    assert gate is not None, "make_engine attaches a gate to every SQLite file engine"
    return gate


@pytest.mark.parametrize(("sql", "write"), [
    ("INSERT INTO t VALUES (1)", True), ("  update t set v = 2", True), ("DELETE FROM t", True),
    ("REPLACE INTO t VALUES (1)", True), ("CREATE INDEX i ON t (v)", True),
    ("SELECT * FROM t", False), ("PRAGMA wal_checkpoint", False), ("WITH x AS (SELECT 1) SELECT 1", False),
])
def test_which_statements_take_the_gate(sql, write):
    assert is_write(sql) is write


def test_the_gate_is_held_from_the_first_write_until_commit_and_rollback_return(engine):
    gate = _gate(engine)
    assert isinstance(gate, WriteGate)
    with engine.connect() as conn:
        conn.execute(text("SELECT * FROM t"))
        assert not gate._lock.locked()  # reads never take it
        conn.execute(text("INSERT INTO t VALUES (1)"))
        assert gate._lock.locked()
        conn.execute(text("INSERT INTO t VALUES (2)"))  # the same transaction: taken once
        conn.commit()
        assert not gate._lock.locked()
        conn.execute(text("UPDATE t SET v = 3"))
        assert gate._lock.locked()
        conn.rollback()
        assert not gate._lock.locked()
    with engine.connect() as conn:  # a connection returned to the pool mid-transaction
        conn.execute(text("INSERT INTO t VALUES (4)"))
    assert not gate._lock.locked()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT v FROM t ORDER BY v")).scalars().all() == [1, 2]


def test_a_second_thread_writes_the_moment_the_first_commits(engine):
    order: list[str] = []
    started = threading.Event()

    def second() -> None:
        started.wait()
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (20)"))
            order.append("second wrote")

    thread = threading.Thread(target=second)
    thread.start()
    with engine.connect() as conn:
        conn.execute(text("INSERT INTO t VALUES (10)"))
        started.set()
        time.sleep(0.3)  # the second thread waits on the gate, not in SQLite's busy handler
        order.append("first commits")
        conn.commit()
    thread.join(10)
    assert order == ["first commits", "second wrote"]


def test_a_gate_held_past_its_timeout_falls_back_to_sqlites_own_lock(engine):
    gate = _gate(engine)
    gate.timeout_s = 0.1
    assert gate._lock.acquire()  # held elsewhere (a stuck holder)
    try:
        with engine.begin() as conn:  # goes on without the gate: SQLite itself is free
            conn.execute(text("INSERT INTO t VALUES (5)"))
    finally:
        gate._lock.release()
    assert not gate._lock.locked()
