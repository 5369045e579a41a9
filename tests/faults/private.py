"""Private copies of the shared services for fault tests: a ``redis-server`` on a free port in
a temp dir, and a TCP proxy that can cut every connection to a real server (PostgreSQL) without
touching it.  Other engineers' tests use the machine's PostgreSQL (5432) and Redis (6379) at the
same time, so the pytest suite never restarts those; ``bench/faults.py`` does, on purpose."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

__all__ = ["free_port", "PrivateRedis", "CutProxy"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRedis:
    """``redis-server`` on 127.0.0.1:<free port>, data in ``dir`` (no persistence);
    ``restart()`` = ``SHUTDOWN NOSAVE`` then start again on the same port."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server is not installed")
        self.binary, self.dir, self.port = binary, directory, free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> PrivateRedis:
        import redis

        self.proc = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)],
            stdout=(self.dir / "redis.log").open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=1).ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("private redis-server did not start: "
                                       + (self.dir / "redis.log").read_text()[-500:]) from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self, down_s: float = 0.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()


class CutProxy:
    """A TCP proxy 127.0.0.1:<port> → ``target``; ``cut()`` drops every open connection and
    refuses new ones until ``restore()`` — what clients see when the server restarts."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.port = target, free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._up = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._up:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            with self._lock:
                self._open -= {src, dst}

    def cut(self) -> None:
        self._up = False
        with self._lock:
            conns = list(self._open)
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restore(self) -> None:
        self._up = True

    def close(self) -> None:
        self.cut()
        self._server.close()
