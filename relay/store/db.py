"""Engine and session factory from a database URL (SQLite file or PostgreSQL).

SQLite (``sqlite:///path``): the parent directory is created, connections may cross threads
(the in-process worker), and every connection turns on ``journal_mode=WAL``,
``synchronous=NORMAL`` (durable across a process crash — kill -9 — not across power loss),
``foreign_keys=ON`` and a 5 s ``busy_timeout``; this process's writers queue on one mutex
(``relay.store.write_gate``) instead of sleeping in SQLite's busy handler.  Every statement and
every commit on a SQLite file engine first checks that the file is still the one opened
(``relay.store.sqlite_file.guard``): a route can never answer 2xx for a row written into a
deleted file, and reads of a vanished database fail (503) instead of serving a ghost.
PostgreSQL: ``postgresql+psycopg://user@host:port/db`` (psycopg 3).

Schema: ``create_schema`` runs the Alembic migrations in ``relay/migrations`` to ``head``, so
SQLite and PostgreSQL get the same schema from the same revisions.  A database created by the
pre-migration ``create_all`` (tables present, no ``alembic_version``) gets its missing tables
created and is stamped ``head``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from relay.retrying import DB_LOCKED
from relay.store import sqlite_file
from relay.store.tables import Base
from relay.store.write_gate import WriteGate

__all__ = ["make_engine", "make_session_factory", "create_schema", "ping", "alembic_config",
           "table_modules", "TABLE_MODULES", "MIGRATIONS_DIR", "retry_locked"]

#: The Alembic script directory shipped inside the package.
MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"

T = TypeVar("T")


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An SQLAlchemy ``Engine`` for ``url`` with the SQLite pragmas above applied."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, **kwargs)
    database = parsed.database or ""
    in_memory = database in ("", ":memory:")
    if in_memory:
        engine = create_engine(url, connect_args={"check_same_thread": False},
                               poolclass=StaticPool, **kwargs)
    else:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        creator, record = sqlite_file.creator_for(database)
        engine = create_engine(url, creator=creator, **kwargs)
        sqlite_file.remember(engine, record)
        sqlite_file.guard(engine)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        if not in_memory:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=5000")
        cur.close()

    WriteGate(timeout_s=5.0).attach(engine)
    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """A ``sessionmaker`` bound to ``engine``; objects stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def alembic_config(url: str | None = None) -> Config:
    """An Alembic ``Config`` for the packaged migrations (``sqlalchemy.url`` = ``url`` if given)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url)
    return cfg


#: Modules that declare tables on ``Base`` besides ``relay.store.tables`` (for autogenerate and
#: the legacy ``create_all`` path); add a module here when it defines a table.
TABLE_MODULES = ("relay.store.tables", "relay.store.regression", "relay.store.culprits",
                 "relay.store.quarantine", "relay.store.shard_results", "relay.store.selections",
                 "relay.store.progress")


def table_modules() -> list[str]:
    """Import every ``TABLE_MODULES`` entry that exists; returns the ones imported."""
    import importlib

    done = []
    for name in TABLE_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        done.append(name)
    return done


def _head() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def create_schema(engine: Engine) -> None:
    """Bring the database to the newest migration (``alembic upgrade head``); idempotent and
    cheap when already at head (one ``SELECT`` on ``alembic_version``)."""
    head = _head()
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
        if current == head:
            return
        legacy = current is None and inspect(conn).has_table("deliveries")
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        if legacy:
            table_modules()
            Base.metadata.create_all(conn)
            command.stamp(cfg, "head")
        else:
            command.upgrade(cfg, "head")


def check_file(session: Session | Connection) -> None:
    """For a SQLite file database, raise ``DatabaseFileGone`` when the file is no longer at its
    path — removed, or replaced by another file (``relay.store.sqlite_file``; one ``stat``);
    nothing for other databases."""
    engine = session.engine if isinstance(session, Connection) else session.get_bind()
    if isinstance(engine, Engine):
        sqlite_file.check(engine)


def ping(session: Session) -> None:
    """Run ``SELECT 1`` (and ``check_file``); raises when the database is unreachable."""
    check_file(session)
    session.execute(text("SELECT 1"))


def _locked(exc: BaseException) -> bool:
    from sqlalchemy.exc import OperationalError

    text_ = str(exc).lower()
    return isinstance(exc, OperationalError) and ("locked" in text_ or "busy" in text_)


def retry_locked(fn: Callable[[], T]) -> T:
    """``fn()``, called again while SQLite answers "database is locked" past its own 5 s
    ``busy_timeout`` (another process — ``relay replay``, ``relay quarantine`` — holding the
    write lock), under ``relay.retrying.DB_LOCKED`` (8 tries, 0.5 s doubling to 8 s).  ``fn``
    must open its own session (a failed transaction is rolled back with it).  Any other error,
    or the last "locked" one, is raised."""
    for attempt in DB_LOCKED.retrying(_locked):
        with attempt:
            result = fn()
    return result
