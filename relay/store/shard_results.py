"""The ``shard_results`` table: one executed test of a distributed run, keyed by
(``run_key``, ``test_id``) with a UNIQUE constraint, written by upsert.

A shard task records each result as it finishes.  Celery delivers at least once, so a shard may
run again after its worker died (or, with a too-short visibility timeout, twice at once); the
upsert keeps one row per test and counts extra writes in ``writes``, so a re-delivered shard never
counts a test twice.  ``worker`` is the Celery hostname that wrote the row last.

No Celery import here: the table must be importable wherever the schema is (migrations).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import DateTime, Float, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.store.tables import Base, utcnow
from test_specs.values.results import TestResult

__all__ = ["ShardResultRecord", "record_results", "load_results", "recorded_ids"]

_FIELDS = ("upstream", "op", "module", "dtype", "mode", "outcome", "duration_ms", "attempts",
           "message", "detail")


class ShardResultRecord(Base):
    """One test of one distributed execution; UNIQUE per (``run_key``, ``test_id``)."""

    __test__ = False
    __tablename__ = "shard_results"
    __table_args__ = (UniqueConstraint("run_key", "test_id", name="uq_shard_results_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_key: Mapped[str] = mapped_column(String(100), index=True)
    test_id: Mapped[str] = mapped_column(String(500))
    shard: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str] = mapped_column(String(200), default="")
    writes: Mapped[int] = mapped_column(Integer, default=1)
    upstream: Mapped[str] = mapped_column(String(500))
    op: Mapped[str | None] = mapped_column(String(200))
    module: Mapped[str | None] = mapped_column(String(200))
    dtype: Mapped[str | None] = mapped_column(String(50))
    mode: Mapped[str] = mapped_column(String(30))
    outcome: Mapped[str] = mapped_column(String(20))
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    message: Mapped[str | None] = mapped_column(Text)
    #: the runner's failure output (bounded when the run is stored)
    detail: Mapped[str | None] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def _insert(session: Session):
    name = session.get_bind().dialect.name
    if name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - the relay supports these two
        raise ValueError(f"shard results need PostgreSQL or SQLite, not {name}")
    return insert


def record_results(session: Session, run_key: str, results: Iterable[TestResult], *,
                   shard: int = 0, worker: str = "") -> int:
    """Upsert ``results`` under ``run_key`` and commit; returns the number of rows written.

    An existing (run_key, test_id) row is overwritten with the newer result and its ``writes``
    incremented — never a second row.  Raises ``ValueError`` for an empty ``run_key``.
    """
    if not run_key:
        raise ValueError("run_key must be a non-empty string")
    rows = [{"run_key": run_key, "test_id": r.id, "shard": shard, "worker": worker,
             "writes": 1, "recorded_at": utcnow(), **{f: getattr(r, f) for f in _FIELDS}}
            for r in results]
    if not rows:
        return 0
    table = ShardResultRecord.__table__
    stmt = _insert(session)(table).values(rows)
    stmt = stmt.on_conflict_do_update(
        index_elements=["run_key", "test_id"],
        set_={**{f: stmt.excluded[f] for f in (*_FIELDS, "shard", "worker", "recorded_at")},
              "writes": table.c.writes + 1})
    session.execute(stmt)
    session.commit()
    return len(rows)


def _to_result(row: ShardResultRecord) -> TestResult:
    return TestResult(id=row.test_id, **{f: getattr(row, f) for f in _FIELDS})


def load_results(session: Session, run_key: str, ids: Iterable[str] | None = None
                 ) -> dict[str, TestResult]:
    """``{test_id: TestResult}`` recorded under ``run_key`` (restricted to ``ids`` if given)."""
    stmt = select(ShardResultRecord).where(ShardResultRecord.run_key == run_key)
    wanted = set(ids) if ids is not None else None
    return {r.test_id: _to_result(r) for r in session.scalars(stmt)
            if wanted is None or r.test_id in wanted}


def recorded_ids(session: Session, run_key: str) -> set[str]:
    """The test ids already recorded under ``run_key``."""
    return set(session.scalars(select(ShardResultRecord.test_id)
                               .where(ShardResultRecord.run_key == run_key)))
