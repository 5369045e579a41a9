"""Store round trip on SQLite and on the real PostgreSQL (isolated schema, dropped afterwards).

PostgreSQL URL: ``RELAY_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``); skipped when the server is absent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from relay.errors import RunNotFound
from relay.settings import Settings
from relay.store import (
    claim_delivery,
    create_schema,
    get_delivery,
    insert_delivery,
    list_hud_results,
    list_runs,
    load_delivery,
    load_run,
    make_engine,
    make_session_factory,
    mark_delivery,
    pending_deliveries,
    save_run,
    store_hud_result,
)
from tests.fakes.github import pull_request_payload
from tests.fakes.runs import make_run
from tests.pg import PG_URL  # noqa: E402
from tests.service.conftest import SECRET


def _postgres_engine() -> Iterator[tuple[Engine, str]]:
    schema = f"relay_test_{uuid.uuid4().hex[:12]}"
    admin = make_engine(PG_URL, connect_args={"connect_timeout": 3})
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001 - any connection failure means "no server here"
        admin.dispose()
        pytest.skip(f"PostgreSQL not reachable at {PG_URL}: {type(exc).__name__}: {exc}"[:300])
    engine = make_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
    try:
        yield engine, schema
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def session(request, tmp_path) -> Iterator[Session]:
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
        gen = None
    else:
        gen = _postgres_engine()
        engine, _ = next(gen)
    create_schema(engine)
    with make_session_factory(engine)() as s:
        yield s
    if gen is None:
        engine.dispose()
    else:
        gen.close()


def test_delivery_lifecycle(session: Session) -> None:
    assert insert_delivery(session, delivery_id="g-1", event="pull_request", payload='{"number": 1}',
                           action="opened", hook_id="9")
    assert not insert_delivery(session, delivery_id="g-1", event="pull_request", payload="{}")
    assert insert_delivery(session, delivery_id="g-2", event="push", payload="{}")
    assert pending_deliveries(session) == ["g-1", "g-2"]
    assert claim_delivery(session, "g-1") and not claim_delivery(session, "g-1")
    assert pending_deliveries(session) == ["g-2"]
    mark_delivery(session, "g-1", "failed", "boom")
    row = get_delivery(session, "g-1")
    assert (row.status, row.error, row.processed_at is not None) == ("failed", "boom", True)
    d = load_delivery(session, "g-1")
    assert d.payload == {"number": 1} and d.received_at.tzinfo is not None and d.hook_id == "9"
    with pytest.raises(ValueError):
        mark_delivery(session, "g-1", "weird")


def test_run_round_trip(session: Session) -> None:
    a = make_run("a", minutes=0)
    b = make_run("b", minutes=1, outcomes=("passed", "flaky"), delivery_id="g-1", trigger="webhook")
    save_run(session, a)
    save_run(session, b)
    save_run(session, a)  # upsert
    assert load_run(session, "a") == a
    assert load_run(session, "b") == b
    listed = list_runs(session, 10)
    assert [r.id for r in listed] == ["b", "a"]
    assert listed[1].results == [] and listed[1].counts == a.counts
    assert list_runs(session, 1, with_results=True)[0] == b
    with pytest.raises(RunNotFound):
        load_run(session, "zzz")


def test_hud_results_idempotent(session: Session) -> None:
    key = dict(delivery_id="d", repo="spyre-sim", run_id="r", attempt=1, job_name="")
    assert store_hud_result(session, **key, status="in_progress", conclusion=None, body={"v": 1})
    assert not store_hud_result(session, **key, status="completed", conclusion="success", body={"v": 2})
    rows = list_hud_results(session)
    assert len(rows) == 1 and rows[0].status == "completed" and rows[0].body == {"v": 2}


@pytest.mark.postgres
def test_webhook_relay_on_postgres(start_relay, recorder) -> None:
    """The whole intake path (insert, dedup, claim, mark) of a served relay on PostgreSQL."""
    gen = _postgres_engine()
    engine, schema = next(gen)
    try:
        url = engine.url.update_query_dict({"options": f"-csearch_path={schema}"})
        settings = Settings(webhook_secret=SECRET, database_url=url.render_as_string(hide_password=False))
        relay = start_relay(settings, processor=recorder, report=False)
        payload = pull_request_payload()
        assert relay.sender.send("pull_request", payload, delivery_id="pg-1").status_code == 202
        assert relay.sender.send("pull_request", payload, delivery_id="pg-1").status_code == 200
        relay.drain()
        with relay.app.state.session_factory() as s:
            assert get_delivery(s, "pg-1").status == "processed"
        assert [d.id for d in recorder.calls] == ["pg-1"]
        relay.server.stop()  # release pooled connections before the schema is dropped
    finally:
        gen.close()


def test_hud_result_never_moves_back_from_completed(session: Session) -> None:
    key = dict(delivery_id="d", repo="r", run_id="1", attempt=1, job_name="j")
    assert store_hud_result(session, **key, status="completed", conclusion="success", body={"v": 2})
    assert not store_hud_result(session, **key, status="in_progress", conclusion=None, body={"v": 1})
    (row,) = list_hud_results(session)
    assert (row.status, row.body) == ("completed", {"v": 2})
