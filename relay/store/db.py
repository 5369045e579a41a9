"""Engine and session factory from a database URL (SQLite file or PostgreSQL).

SQLite (``sqlite:///path``): the parent directory is created, connections may cross threads
(the in-process worker), and every connection turns on ``journal_mode=WAL``,
``foreign_keys=ON`` and a 5 s ``busy_timeout`` so the web handler and the worker do not block
each other.  PostgreSQL: ``postgresql+psycopg://user@host:port/db`` (psycopg 3).

Schema: ``create_schema`` calls ``Base.metadata.create_all`` for now; Alembic migrations
(``relay/migrations``) will replace it and must start from ``relay.store.tables.Base``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from relay.store.tables import Base

__all__ = ["make_engine", "make_session_factory", "create_schema", "ping"]


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An SQLAlchemy ``Engine`` for ``url`` with the SQLite pragmas above applied."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, **kwargs)
    database = parsed.database or ""
    in_memory = database in ("", ":memory:")
    if not in_memory:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False},
        poolclass=StaticPool if in_memory else None,
        **kwargs,
    )

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        if not in_memory:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=5000")
        cur.close()

    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """A ``sessionmaker`` bound to ``engine``; objects stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def create_schema(engine: Engine) -> None:
    """Create every table that does not exist yet (idempotent)."""
    Base.metadata.create_all(engine)


def ping(session: Session) -> None:
    """Run ``SELECT 1``; raises the driver's error when the database is unreachable."""
    session.execute(text("SELECT 1"))
