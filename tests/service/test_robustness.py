"""Concurrency and failure paths: racing redeliveries, internal errors, database down."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy.orm import sessionmaker

from relay.store import make_engine
from tests.fakes.github import WebhookSender, pull_request_payload
from tests.service.conftest import SECRET, Recorder, Relay


def test_concurrent_redeliveries_accept_exactly_one(relay: Relay, recorder: Recorder) -> None:
    payload = pull_request_payload()

    def send(_: int) -> int:
        sender = WebhookSender(relay.url, SECRET)
        try:
            return sender.send("pull_request", payload, delivery_id="race-1").status_code
        finally:
            sender.close()

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(send, range(16)))
    assert codes == [200] * 15 + [202]
    relay.drain()
    assert [d.id for d in recorder.calls] == ["race-1"]


def test_database_failure_on_intake_is_503_json_without_traceback(relay: Relay) -> None:
    def broken() -> None:
        raise RuntimeError("database on fire")

    relay.app.state.session_factory = broken
    resp = relay.sender.send("pull_request", pull_request_payload(), delivery_id="boom-1")
    assert resp.status_code == 503  # not stored: GitHub marks the delivery failed
    assert resp.json() == {"detail": "delivery not stored: RuntimeError"}


def test_internal_error_is_json_without_traceback(relay: Relay) -> None:
    def broken() -> None:
        raise RuntimeError("database on fire")

    relay.app.state.session_factory = broken
    resp = httpx.get(relay.url + "/api/v1/dashboard")
    assert resp.status_code == 500
    assert resp.json() == {"detail": "internal server error"}


def test_healthz_503_when_database_is_down(relay: Relay) -> None:
    dead = make_engine("postgresql+psycopg://postgres@127.0.0.1:9/none",
                       connect_args={"connect_timeout": 1})
    relay.app.state.session_factory = sessionmaker(bind=dead)
    resp = httpx.get(relay.url + "/healthz", timeout=10)
    assert resp.status_code == 503 and resp.json()["status"] == "error"
    dead.dispose()


def test_unknown_route_and_method_are_json(relay: Relay) -> None:
    assert httpx.get(relay.url + "/nope").json() == {"detail": "Not Found"}
    resp = httpx.get(relay.url + "/webhooks/github")
    assert resp.status_code == 405 and "detail" in resp.json()


def test_intake_bug_after_commit_is_json_500_and_the_delivery_is_kept(relay: Relay) -> None:
    class BrokenQueue:
        def submit_delivery(self, delivery_id: str) -> None:
            raise RuntimeError("queue on fire")

        def close(self, timeout: float | None = None) -> None:
            pass

    relay.app.state.queue = BrokenQueue()
    resp = relay.sender.send("pull_request", pull_request_payload(), delivery_id="kept-1")
    assert resp.status_code == 500
    assert resp.json() == {"detail": "internal server error"}
    again = relay.sender.send("pull_request", pull_request_payload(), delivery_id="kept-1")
    assert again.json()["status"] == "duplicate"  # stored: restart recovery will process it


def test_odd_header_and_action_values_are_4xx_or_stored_safely_on_both_databases(
        db_url: str, start_relay, recorder: Recorder, tmp_path) -> None:
    """Permanently bad input must never be a retryable 503 (PostgreSQL rejects NUL and
    over-long values that SQLite would take)."""
    from relay.settings import Settings
    from relay.store import get_delivery
    from tests.service.conftest import SECRET as secret

    relay = start_relay(Settings(webhook_secret=secret, database_url=db_url, state_dir=tmp_path),
                        processor=recorder, report=False)
    long_hook = relay.sender.send("pull_request", pull_request_payload(), delivery_id="h-1",
                                  headers={"X-GitHub-Hook-ID": "9" * 101})
    assert long_hook.status_code == 400 and "X-GitHub-Hook-ID" in long_hook.json()["detail"]
    nul = relay.sender.send("pull_request", {**pull_request_payload(), "action": "op\u0000ened"},
                            delivery_id="nul-1")
    huge = relay.sender.send("pull_request", {**pull_request_payload(), "action": "x" * 10_000},
                             delivery_id="huge-1")
    # a NUL is refused before the store on both databases (GitHub never sends one); a 10 KB
    # action is no action we handle: stored, ignored, without it
    assert nul.status_code == 400 and nul.json()["detail"] == "body contains a NUL character (\\u0000)"
    assert huge.status_code == 200
    with relay.app.state.session_factory() as s:
        assert get_delivery(s, "nul-1") is None
        row = get_delivery(s, "huge-1")
        assert row.status == "ignored" and row.action is None


def test_a_deleted_sqlite_file_is_refused_not_written_into(relay: Relay) -> None:
    """Deleting the database under a serving relay: intake answers 503 (GitHub marks the
    delivery failed; catch-up can redeliver it later) instead of 202s that vanish at restart."""
    import os
    from pathlib import Path

    assert relay.sender.send("push", {"ref": "refs/heads/main"}, delivery_id="before").status_code in (200, 202)
    db = Path(relay.app.state.settings.database_url.removeprefix("sqlite:///"))
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    resp = relay.sender.send("pull_request", pull_request_payload(), delivery_id="after")
    assert resp.status_code == 503 and resp.json() == {"detail": "delivery not stored: DatabaseFileGone"}
    health = httpx.get(relay.url + "/healthz")
    assert health.status_code == 503 and health.json()["database"] == "DatabaseFileGone"


def test_a_moved_sqlite_file_stays_refused_when_other_connections_open(relay: Relay) -> None:
    """Moving the database away, then reads opening new connections (the dashboard): no pooled
    connection creates an empty file at the path, and no later delivery gets a 2xx while it is
    stored into the moved file nobody reads (an adversarial pass got a 202 for a delivery lost)."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    assert relay.sender.send("push", {"ref": "refs/heads/main"}, delivery_id="pre-1").status_code in (200, 202)
    relay.drain()
    db = Path(relay.app.state.settings.database_url.removeprefix("sqlite:///"))
    db.rename(db.with_name("moved.db"))
    with ThreadPoolExecutor(8) as pool:
        dash = list(pool.map(lambda _: httpx.get(relay.url + "/api/v1/dashboard", timeout=10).status_code,
                             range(24)))
    assert set(dash) <= {200, 503} and 503 in dash  # a pooled connection may still read; new ones 503
    codes = [relay.sender.send("pull_request", pull_request_payload(), delivery_id=f"post-{n}").status_code
             for n in range(5)]
    assert codes == [503] * 5
    assert not db.exists()  # nothing re-created an empty database at the path
    assert httpx.get(relay.url + "/healthz").status_code == 503


def test_reads_and_writes_answer_503_when_postgresql_is_unreachable(relay: Relay) -> None:
    """The database server down (not a bug): the dashboard, a page and the ingest answer 503
    ``database unavailable`` as ``/healthz`` does — never 500, never 2xx."""
    from relay.reporting.body import build_hud_body
    from relay.settings import Settings
    from tests.fakes.runs import make_run

    dead = make_engine("postgresql+psycopg://postgres@127.0.0.1:9/none",
                       connect_args={"connect_timeout": 1})
    body = build_hud_body(make_run("r-1"), Settings(), level="L2").model_dump(mode="json")
    token = relay.app.state.settings.results_token()
    relay.app.state.session_factory = sessionmaker(bind=dead)
    try:
        for method, path, kwargs in (
                ("GET", "/api/v1/dashboard", {}), ("GET", "/", {}),
                ("POST", "/api/crcr/results", {"json": body, "headers": {"x-hud-internal-bot": token}})):
            resp = httpx.request(method, relay.url + path, timeout=10, **kwargs)
            assert resp.status_code == 503, (path, resp.status_code, resp.text)
            assert resp.json()["detail"] == "database unavailable: OperationalError"
    finally:
        dead.dispose()


def test_a_value_postgresql_refuses_is_422_with_the_reason_not_500(relay: Relay) -> None:
    """A NUL in a query or a stored field: PostgreSQL's ``DataError`` is the caller's input, 422
    with the database's reason, as a shape error would be — never a 500."""
    from relay.store import create_schema
    from tests.pg import fresh_schema_url

    urls = fresh_schema_url("nul")
    url = next(urls)
    engine = make_engine(url)
    create_schema(engine)
    relay.app.state.session_factory = sessionmaker(bind=engine)
    try:
        for path in ("/api/v1/tests?test=%00", "/api/v1/tests/history?test=%00", "/tests?op=%00"):
            resp = httpx.get(relay.url + path, timeout=10)
            assert resp.status_code == 422, (path, resp.status_code, resp.text)
            assert resp.json()["detail"].startswith("a value the database cannot store or compare: ")
    finally:
        engine.dispose()
        urls.close()
