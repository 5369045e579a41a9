"""Fixtures for the distributed tests: a fresh PostgreSQL schema, a Redis URL with a unique
queue name, a tiny spec, and ``relay worker`` subprocesses (each in its own process group so a
test can kill -9 a whole worker).  Tests skip, saying why, when Celery, Redis or PostgreSQL is
missing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pg import fresh_schema_url

pytest.importorskip("celery", reason="celery[redis] is not installed (relay worker needs it)")

REDIS_URL = os.environ.get("RELAY_TEST_REDIS_URL", "redis://127.0.0.1:6379")
OPS = ["abs", "add", "cos", "exp", "mul", "neg", "sin", "sub"]
SLOW_TEMPLATES = "tests.distributed.slow_templates"


def tiny_spec(path: Path, ops: list[str] = OPS, template: str = "TestCommon::test_compare_cpu") -> list[str]:
    """Write a spec with ``template`` over ``ops`` in float16 to ``path``; returns the item ids."""
    inc = ", ".join(f"{{name: {o}}}" for o in ops)
    path.write_text(f"""test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      tests:
        - names: [{template}]
          edits:
            ops:
              include: [{inc}]
  global:
    supported_dtypes: [float16]
""")
    return sorted(f"{path.stem}::{template}[{o}-float16]" for o in ops)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose ``search_path`` is a fresh schema (dropped afterwards)."""
    yield from fresh_schema_url("relay_d")


@pytest.fixture
def redis_url() -> str:
    """``redis://127.0.0.1:6379/<db>``; skips when Redis does not answer PING."""
    import redis

    db = 13
    url = f"{REDIS_URL}/{db}"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Redis at {REDIS_URL} not usable: {type(exc).__name__}")
    return url


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen
    log: Path

    def kill9(self) -> None:
        """SIGKILL the worker's whole process group (main process, pool, pytest)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def dist_env(tmp_path: Path, pg_url: str, redis_url: str) -> dict[str, str]:
    """Environment of a distributed relay: PostgreSQL + Redis, a unique queue."""
    return {"RELAY_DATABASE_URL": pg_url, "RELAY_BROKER_URL": redis_url,
            "RELAY_CELERY_QUEUE": f"relay-test-{uuid.uuid4().hex[:8]}",
            "RELAY_STATE_DIR": str(tmp_path / "state"), "RELAY_SHARD_SIZE": "2",
            "RELAY_VISIBILITY_TIMEOUT_S": "600", "RELAY_RESTORE_INTERVAL_S": "1",
            "RELAY_RESULT_WAIT_S": "400"}


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """``start_worker(env, name)`` starts ``relay worker -c 1 -n <name>@test`` and waits until
    it is ready; every worker is stopped (TERM, then KILL) at teardown."""
    started: list[Worker] = []
    relay_bin = Path(sys.executable).parent / "relay"

    def start(env: dict[str, str], name: str, concurrency: int = 1) -> Worker:
        log = tmp_path / f"worker-{name}.log"
        full = {**os.environ, **env}
        proc = subprocess.Popen([str(relay_bin), "worker", "-c", str(concurrency), "-n",
                                 f"{name}@test", "--loglevel", "INFO"], env=full,
                                stdout=log.open("ab"), stderr=subprocess.STDOUT,
                                start_new_session=True)
        w = Worker(f"{name}@test", proc, log)
        started.append(w)
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "worker not ready:\n" + log.read_text()[-3000:]
            time.sleep(0.1)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            try:
                os.killpg(w.proc.pid, signal.SIGTERM)
                w.proc.wait(15)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(w.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                w.proc.wait(10)
