"""Issue 17: a Celery worker killed -9 while kombu's ``unacked_mutex`` is held (it is taken by
every worker's periodic restore) must not block redelivery for kombu's default 300 s: the
message of the killed task runs again within about ``visibility_timeout + 2 × restore interval``
(``relay.worker.celery.config.mutex_expire_s``).  Real ``celery worker`` processes on a PRIVATE
redis-server (the shared one on 6379 is never touched), bounded by the test's timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relay.settings import Settings
from tests.faults.private import PrivateRedis

pytest.importorskip("celery", reason="celery[redis] is not installed")

APP = '''
import os, pathlib, time
from relay.settings import Settings
from relay.worker.celery.config import make_celery
app = make_celery(Settings())

@app.task(name="faults.hold", bind=True)
def hold(self, marker_dir):
    runs = pathlib.Path(marker_dir)
    n = len(list(runs.glob("run-*")))
    (runs / f"run-{n}").write_text(str(time.time()))
    if n == 0:
        time.sleep(600)  # the first run is killed in the middle
    return n
'''
VISIBILITY_S, RESTORE_S = 3, 1


@pytest.fixture
def private_redis(tmp_path: Path):
    try:
        server = PrivateRedis(tmp_path).start()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()


def _worker(tmp_path: Path, env: dict[str, str], name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "holdapp", "worker", "--pool=solo",
         "--concurrency=1", "-n", f"{name}@faults", "--without-gossip", "--without-mingle",
         "--without-heartbeat", "-l", "INFO"],
        cwd=tmp_path, env=env, stdout=(tmp_path / f"{name}.log").open("ab"),
        stderr=subprocess.STDOUT, start_new_session=True)


def _wait(path: Path, timeout: float, what: str, logs: list[Path]) -> float:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, what + "\n" + "\n".join(
            p.read_text()[-1500:] for p in logs if p.exists())
        time.sleep(0.1)
    return time.monotonic()


@pytest.mark.timeout(240)
def test_a_worker_killed_holding_the_unacked_mutex_does_not_block_redelivery(
        tmp_path: Path, private_redis: PrivateRedis) -> None:
    import redis

    from relay.worker.celery.config import make_celery, mutex_expire_s

    (tmp_path / "holdapp.py").write_text(APP)
    runs = tmp_path / "runs"
    runs.mkdir()
    env = {**os.environ, "RELAY_BROKER_URL": private_redis.url,
           "RELAY_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S), "RELAY_RESTORE_INTERVAL_S": str(RESTORE_S),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[2])])}
    settings = Settings(broker_url=private_redis.url, visibility_timeout_s=VISIBILITY_S,
                        restore_interval_s=RESTORE_S)
    app = make_celery(settings)
    options = app.conf.broker_transport_options
    assert options["unacked_mutex_expire"] == mutex_expire_s(settings) <= 2 * RESTORE_S + 1
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = _worker(tmp_path, env, "first")
    second = None
    try:
        app.send_task("faults.hold", args=(str(runs),))
        _wait(runs / "run-0", 120, "the first worker never started the task", logs)
        # the dead worker held the restore lock (kombu takes it with redis-py's lock: SET NX PX)
        client = redis.Redis.from_url(private_redis.url)
        client.set("unacked_mutex", "held-by-a-dead-worker", px=options["unacked_mutex_expire"] * 1000)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        killed = time.monotonic()
        second = _worker(tmp_path, env, "second")
        again = _wait(runs / "run-1", 150, "the killed task was never handed out again", logs)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    took = again - killed
    print(f"redelivered {took:.1f} s after the kill (visibility {VISIBILITY_S} s, restore "
          f"{RESTORE_S} s, mutex {options['unacked_mutex_expire']} s; worker start included)")
    # kombu's default mutex (300 s) would hold it for minutes; allow the second worker's start
    # on a loaded machine (~10-60 s) on top of visibility + mutex + restore
    assert took < 120
