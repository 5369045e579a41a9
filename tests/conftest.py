"""Generic fixtures shared by every test directory (keep domain fixtures next to their tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakes.live import LiveServer


@pytest.fixture
def live_server() -> Iterator[Callable[[Any], LiveServer]]:
    """``live_server(app)`` serves an ASGI app on 127.0.0.1:<free port> with uvicorn in a
    thread (lifespan on) and returns the started ``LiveServer`` (``.url``); all servers
    started by the test are stopped at teardown, newest first."""
    servers: list[LiveServer] = []

    def start(app: Any) -> LiveServer:
        server = LiveServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in reversed(servers):
        server.stop()
