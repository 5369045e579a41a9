"""Fast versions of ``bench/faults.py`` (issue 17): real ``relay serve`` / ``relay worker``
processes under a short load while a part under them fails; 0 lost and 0 stuck in each.

The shared services are never taken down here (other engineers' tests use them right now):
PostgreSQL is cut through a private TCP proxy (every connection dropped, new ones refused — what
a restart looks like to the relay), Redis is a private ``redis-server`` restarted for real, the
read-only state directory is a private tmpfs.  The real restarts run in ``bench/faults.py``."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from bench import faults
from tests.fakes.github import FakeGitHub
from tests.faults.private import CutProxy, PrivateRedis
from tests.pg import PG_URL


@pytest.fixture
def ctx(tmp_path: Path, fake_github_server) -> faults.Ctx:
    fake, url = fake_github_server
    return faults.Ctx(tmp_path, fake, url, rate=4.0, load_s=8.0, fault_at_s=3.0, outage_s=2.0,
                      github_down_s=3.0, drain_s=120.0)


@pytest.fixture
def fake_github_server(live_server) -> tuple[FakeGitHub, str]:
    fake = FakeGitHub()
    return fake, live_server(fake.app()).url


@pytest.fixture
def pg_available() -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(PG_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL at {PG_URL} not usable: {type(exc).__name__}")
    finally:
        engine.dispose()


def _ok(row: faults.Row) -> None:
    print(row)
    assert row.acked > 0, row
    assert (row.lost, row.stuck) == (0, 0), row


@pytest.mark.timeout(400)
def test_postgres_connections_cut_mid_load(ctx: faults.Ctx, pg_available: None) -> None:
    url = make_url(PG_URL)
    proxy = CutProxy((url.host or "127.0.0.1", url.port or 5432))

    def cut() -> None:
        proxy.cut()
        time.sleep(ctx.outage_s)
        proxy.restore()

    ctx.pg_url_for = lambda db: url.set(port=proxy.port, database=db).render_as_string(
        hide_password=False)
    ctx.pg_fault = cut
    try:
        _ok(faults.pg(ctx))
    finally:
        proxy.close()


@pytest.mark.timeout(500)
def test_private_redis_restarted_mid_load(ctx: faults.Ctx, pg_available: None,
                                          tmp_path: Path) -> None:
    pytest.importorskip("celery", reason="celery[redis] is not installed")
    try:
        redis = PrivateRedis(tmp_path).start()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    ctx.redis_url, ctx.redis_fault = redis.url, lambda: redis.restart(down_s=1.0)
    try:
        _ok(faults.redis(ctx))
    finally:
        redis.stop()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_relay_killed_mid_run_with_the_real_pipeline(ctx: faults.Ctx, pg_available: None) -> None:
    """In-process relay running the real pipeline on a small spec, killed -9 and restarted
    (``slow``: ~6 min under load, a pipeline run per delivery; ``tests/service/test_kill9.py``
    is the fast relay kill)."""
    ctx.load_s = 30.0
    row = faults.kill9(ctx, worker=False)
    _ok(row)
    assert row.dup_fx == 0  # a run is stored once even when its delivery is run again


@pytest.mark.timeout(400)
def test_github_answering_5xx_and_429(ctx: faults.Ctx, pg_available: None) -> None:
    row = faults.github(ctx)
    _ok(row)
    assert row.unsent == 0  # every dispatch went out once GitHub was back


@pytest.fixture
def can_mount(tmp_path: Path) -> Iterator[None]:
    probe = tmp_path / "probe"
    probe.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
    subprocess.run(["umount", str(probe)], check=False)
    yield


@pytest.mark.timeout(400)
def test_state_directory_read_only_for_a_moment(ctx: faults.Ctx, can_mount: None) -> None:
    _ok(faults.readonly(ctx))
