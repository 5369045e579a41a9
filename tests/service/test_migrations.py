"""Alembic migrations build the same schema as ``relay.store.tables`` on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from relay.store import create_schema, make_engine
from relay.store.db import alembic_config, table_modules
from relay.store.tables import Base

table_modules()  # every module that adds tables to Base.metadata
HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_upgrade_head_on_empty_database_matches_models(db_url) -> None:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert inspect(conn).get_table_names() == []
        create_schema(engine)
        create_schema(engine)  # idempotent
        with engine.connect() as conn:
            names = set(inspect(conn).get_table_names())
            assert set(Base.metadata.tables) | {"alembic_version"} == names
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(ctx, Base.metadata) == []
            assert ctx.get_current_revision() == HEAD
    finally:
        engine.dispose()


def test_alembic_cli_config_reads_url_and_downgrades(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    cfg = alembic_config(url)
    command.upgrade(cfg, "head")
    command.downgrade(cfg, "base")
    engine = make_engine(url)
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == {"alembic_version"}
    engine.dispose()


def test_legacy_create_all_database_is_stamped(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'legacy.db'}")
    Base.metadata.tables["deliveries"].create(engine)
    create_schema(engine)
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == HEAD
        assert "outbox" in inspect(conn).get_table_names()
    engine.dispose()


def _schema(engine) -> dict[str, tuple[list[str], list[str]]]:
    """Per table: its column names and index names (what a revision may add)."""
    insp = inspect(engine)
    return {t: (sorted(c["name"] for c in insp.get_columns(t)),
                sorted(str(i["name"]) for i in insp.get_indexes(t)))
            for t in insp.get_table_names()}


def test_upgrade_from_the_previous_revision_keeps_data(db_url) -> None:
    """A database at the revision before head (with a stored run) upgrades to head cleanly and
    keeps its rows; downgrading one step restores exactly the previous schema."""
    from sqlalchemy import text

    script = ScriptDirectory.from_config(alembic_config())
    previous = script.get_revision(HEAD).down_revision
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, previous)
            conn.execute(text(
                "INSERT INTO runs (id, backend, upstream, base, head, title, trigger, started_at,"
                " finished_at, universe, selected, conclusion, stages, counts) VALUES ('r1', 'b',"
                " 'u', 'x', 'y', '', 'replay', '2026-01-01T00:00:00+00:00',"
                " '2026-01-01T00:00:01+00:00', 0, 0, 'success', '[]', '{}')"))
        before = _schema(engine)
        create_schema(engine)
        with engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == HEAD
            assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 1
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(ctx, Base.metadata) == []
        assert _schema(engine) != before, "head changes nothing over the previous revision"
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, previous)
        assert _schema(engine) == before
    finally:
        engine.dispose()


def test_0012_moves_each_payload_to_its_own_table_and_back(db_url) -> None:
    """Revision 0012 takes payloads out of ``deliveries`` (a status UPDATE no longer rewrites a
    25 KB row): a delivery stored at 0011 loads with the same payload at head, and downgrading
    puts the payload back into its column."""
    from sqlalchemy import text

    from relay.store import make_session_factory
    from relay.store.deliveries import load_delivery

    engine = make_engine(db_url)
    body = '{"action": "opened", "number": 7, "pad": "' + "x" * 30_000 + '"}'
    try:
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0011")
            conn.execute(text(
                "INSERT INTO deliveries (delivery_id, event, received_at, payload, status, attempts)"
                " VALUES ('old-1', 'pull_request', '2026-01-01 00:00:00', :p, 'received', 0)"),
                {"p": body})
        create_schema(engine)
        with make_session_factory(engine)() as session:
            delivery = load_delivery(session, "old-1")
        assert delivery is not None and delivery.payload["number"] == 7
        assert len(delivery.payload["pad"]) == 30_000
        with engine.connect() as conn:
            assert "payload" not in {c["name"] for c in inspect(conn).get_columns("deliveries")}
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0011")
            assert conn.execute(text("SELECT payload FROM deliveries")).scalar() == body
    finally:
        engine.dispose()
