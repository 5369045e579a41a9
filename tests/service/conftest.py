"""Fixtures for the service tests: settings on a temp SQLite file, a recording processor, a
relay served on loopback with a webhook sender, and a fake GitHub."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy.orm import Session, sessionmaker

from relay.domain.delivery import Delivery
from relay.service import create_app
from relay.settings import Settings
from tests.fakes.github import FakeGitHub, WebhookSender
from tests.fakes.live import LiveServer
from tests.pg import fresh_schema_url

SECRET = "test-webhook-secret-0123456789"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'relay.db'}",
                    state_dir=tmp_path)


@dataclass
class Recorder:
    """A processor that records the deliveries it is given (and can be told to fail)."""

    calls: list[Delivery] = field(default_factory=list)
    fail: Exception | None = None
    event: threading.Event = field(default_factory=threading.Event)

    def __call__(self, delivery: Delivery, settings: Settings, sink: object = None) -> None:
        self.calls.append(delivery)
        self.event.set()
        if self.fail is not None:
            raise self.fail

    def wait_for(self, n: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.calls) < n:
            assert time.monotonic() < deadline, f"expected {n} processor calls, got {len(self.calls)}"
            time.sleep(0.01)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@dataclass
class Relay:
    app: FastAPI
    server: LiveServer
    sender: WebhookSender

    @property
    def url(self) -> str:
        return self.server.url

    def drain(self, timeout: float = 10.0) -> None:
        """Wait until the in-process queue has handled every submitted delivery."""
        assert self.app.state.queue.join(timeout), "task queue did not drain"

    def wait_outbox(self, timeout: float = 10.0) -> dict[str, int]:
        """Wait until no outbox row is ``pending``; returns the counts per status."""
        from relay.store.outbox import outbox_counts

        deadline = time.monotonic() + timeout
        while True:
            self.app.state.deliverer.kick()
            with self.app.state.session_factory() as s:
                counts = outbox_counts(s)
            if not counts.get("pending"):
                return counts
            assert time.monotonic() < deadline, f"outbox still pending: {counts}"
            time.sleep(0.02)


@pytest.fixture
def start_relay(live_server: Callable[[Any], LiveServer]) -> Iterator[Callable[..., Relay]]:
    senders: list[WebhookSender] = []

    def start(settings: Settings, **kwargs: Any) -> Relay:
        app = create_app(settings, **kwargs)
        server = live_server(app)
        sender = WebhookSender(server.url, SECRET)
        senders.append(sender)
        return Relay(app, server, sender)

    yield start
    for s in senders:
        s.close()


@pytest.fixture
def relay(start_relay: Callable[..., Relay], settings: Settings, recorder: Recorder) -> Relay:
    return start_relay(settings, processor=recorder, report=False)


@pytest.fixture
def fake_github(live_server: Callable[[Any], LiveServer]) -> tuple[FakeGitHub, str]:
    fake = FakeGitHub()
    return fake, live_server(fake.app()).url


ALLOWLIST_YAML = """\
L1: [acme/l1-ci]
L2: [acme/l2-ci, spyre-sim]
L3:
  spyre: {acme/l3-ci: [alice]}
L4:
  - acme/l4-ci: "bob, carol"
"""


@pytest.fixture
def crcr(tmp_path: Path, start_relay: Callable[..., Relay],
         fake_github: tuple[FakeGitHub, str], recorder: Recorder):
    """``crcr(allowlist_text=ALLOWLIST_YAML, **settings)`` → (relay, fake GitHub): a relay with
    a file allowlist, dispatching to the fake GitHub, local backend = the recorder."""
    fake, gh_url = fake_github

    def start(allowlist_text: str = ALLOWLIST_YAML, **overrides: Any) -> tuple[Relay, FakeGitHub]:
        path = tmp_path / "allowlist.yaml"
        path.write_text(allowlist_text)
        fields: dict[str, Any] = dict(
            webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'crcr.db'}",
            state_dir=tmp_path, github_api_url=gh_url, allowlist=str(path),
            allowlist_refresh_s=0.0, outbox_poll_s=0.05, outbox_backoff_s=0.05,
            dispatch_max_wait_s=2.0)
        fields.update(overrides)
        relay = start_relay(Settings(**fields), processor=recorder)
        return relay, fake

    return start


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database URL on the real PostgreSQL whose ``search_path`` is a fresh, empty schema
    (dropped afterwards); skips when PostgreSQL is not reachable."""
    yield from fresh_schema_url("relay_t")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Both databases: a temp SQLite file, and a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'relay.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def one_delivery(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    """A session factory on ``tmp_path/relay.db`` holding one ``received`` pull_request
    delivery ``d-1`` (for driving ``process_delivery`` directly)."""
    import json

    from relay.store import create_schema, insert_delivery, make_engine, make_session_factory
    from tests.fakes.github import pull_request_payload

    engine = make_engine(f"sqlite:///{tmp_path / 'relay.db'}")
    create_schema(engine)
    sf = make_session_factory(engine)
    with sf() as s:
        insert_delivery(s, delivery_id="d-1", event="pull_request", action="opened",
                        payload=json.dumps(pull_request_payload()))
    yield sf
    engine.dispose()


#: the op_db OpInfos of ``push_spec`` (``TestCommon::test_compare_cpu`` at float16)
PUSH_OPS = ("softmax", "log_softmax", "add")


@pytest.fixture(scope="session")
def push_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small op_db spec for the push tests' real selection (ids ``push::…[<op>-float16]``)."""
    from tests.spec_text import compare_cpu_spec

    spec = tmp_path_factory.mktemp("push-spec") / "push.yaml"
    spec.write_text(compare_cpu_spec(PUSH_OPS, exclude=["softmax.with_dtype"]))
    return spec


@pytest.fixture(scope="session")
def push_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One state directory for the push tests: ``push_spec``'s op index is captured once."""
    return tmp_path_factory.mktemp("push-state")
