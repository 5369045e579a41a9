"""Serve an ASGI app with uvicorn on 127.0.0.1 (a free port) in a background thread."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

__all__ = ["LiveServer"]


class LiveServer:
    """``LiveServer(app).start()`` → ``.url`` (``http://127.0.0.1:<port>``); ``.stop()``.

    The socket is bound before uvicorn starts (port 0 → a free port chosen by the OS), and the
    app's lifespan runs, so startup hooks (restart recovery) behave as under ``relay serve``.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]},
                                        name=f"uvicorn-{self.port}", daemon=True)

    def start(self, timeout: float = 10.0) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()
