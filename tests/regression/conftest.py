"""Fixtures of the regression tests: both databases, and the fake GitHub over loopback HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tenacity import wait_none

from relay.github.client import GitHubClient
from relay.store import create_schema, make_engine, make_session_factory
from tests.fakes.github import FakeGitHub
from tests.pg import fresh_schema_url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'relay.db'}"
    else:
        yield from fresh_schema_url("relay_q")


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    create_schema(engine)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture
def github(live_server: Callable[[Any], Any]) -> Iterator[tuple[FakeGitHub, GitHubClient]]:
    fake = FakeGitHub()
    url = live_server(fake.app()).url
    with GitHubClient(url, "t0ken", attempts=2, wait=wait_none()) as client:
        yield fake, client

