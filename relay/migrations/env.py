"""Alembic environment for the relay schema (target: ``relay.store.tables.Base.metadata``).

The database comes from, in order: a connection passed by ``relay.store.db.create_schema``
(``config.attributes["connection"]``), the ``sqlalchemy.url`` of the config, or the
``RELAY_DATABASE_URL`` environment variable (``relay.settings.Settings`` default otherwise) —
so ``alembic upgrade head`` from the repository root migrates the configured database.
SQLite runs in batch mode (``render_as_batch``) so ``ALTER`` becomes copy-and-move.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from relay.store.db import table_modules
from relay.store.tables import Base

table_modules()  # every module declaring tables on Base, so autogenerate sees them all
config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from relay.settings import get_settings

    return get_settings().database_url


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == "sqlite",
                      compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True,
                      dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from relay.store.db import make_engine

    engine = make_engine(_url())
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
