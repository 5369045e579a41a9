"""Intake benchmark: signed ~25 KB ``pull_request`` deliveries against the relay, next to a bare
uvicorn app measured in the same run on the same machine.

    python bench/intake.py [--seconds 5] [--rate 200] [--concurrency 16] [--database-url URL]

Both servers run as separate processes under the same uvicorn settings (one worker, no
access log, ``log_level=warning``, ``--http auto`` = httptools + uvloop as ``relay serve`` runs
them, or ``--http h11`` for the pure-Python parser on asyncio); this process is the load generator (a small keep-alive
HTTP/1.1 client on asyncio streams, so the client costs little next to the servers).

* the relay: ``create_app`` from the environment (``relay serve`` without its access log),
  a temp SQLite database (or ``--database-url``), and an allowlist with no targets, so the
  worker only claims and closes each delivery — the numbers are intake: HMAC over the body,
  header checks, JSON parse, the committed INSERT, the 202;
* the minimal durable receiver: a raw ASGI callable doing only what this design must do before
  it answers — HMAC-SHA256 over the body (``compare_digest``), a JSON parse (orjson, as the
  relay), the delivery row INSERTed and COMMITted to SQLite in WAL mode with the relay's
  ``synchronous=NORMAL`` — then 202: the honest ceiling of this design, and the goal's baseline;
* the bare app: a raw ASGI callable that reads the body and answers 202 — the no-work ceiling,
  printed for context;
* for context too, a bare FastAPI app with one route that reads the body and answers 202;
* and, to split the relay's number, "relay intake": the same relay with processing parked
  (accepted rows stay ``received``) — what the intake path costs without the in-process
  workers claiming and marking each delivery beside it.

Two phases per server: *open loop* at ``--rate`` req/s (requests sent on a fixed schedule;
latency counted from the scheduled send time, so queueing is not hidden), then *closed loop*
(``--concurrency`` connections sending back to back for ``--seconds``: throughput).
Prints requests/s and p50/p99 latency in ms, and the ratios.  Goals (issue 12): relay
throughput ≥ 0.8× the minimal durable receiver, p99 ≤ 50 ms at 200 req/s.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from fastapi import FastAPI, Request  # module level: the route's annotations resolve here
from fastapi.responses import JSONResponse

SECRET = "bench-webhook-secret-0123456789"
ROOT = Path(__file__).resolve().parent.parent


async def bare_app(scope, receive, send):  # noqa: ANN001 - a raw ASGI callable
    """Reads the whole body and answers 202 ``{"status":"accepted"}``."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    body = b'{"status":"accepted"}'
    await send({"type": "http.response.start", "status": 202,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


_DURABLE: dict = {}


async def _read(receive) -> bytes:  # noqa: ANN001
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


async def durable_app(scope, receive, send):  # noqa: ANN001 - a raw ASGI callable
    """Verify, parse, commit to SQLite, then 202 — nothing else (see the module docstring)."""
    import sqlite3

    import orjson

    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                conn = sqlite3.connect(os.environ["BENCH_DURABLE_DB"], isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS deliveries (delivery_id TEXT PRIMARY KEY,"
                             " event TEXT, payload TEXT, received_at REAL)")
                _DURABLE["db"] = conn
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                _DURABLE["db"].close()
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = await _read(receive)
    headers = dict(scope["headers"])
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    status = 401
    if hmac.compare_digest(expected.encode(), headers.get(b"x-hub-signature-256", b"")):
        orjson.loads(body)
        db = _DURABLE["db"]
        db.execute("BEGIN")
        db.execute("INSERT OR IGNORE INTO deliveries VALUES (?, ?, ?, ?)",
                   (headers[b"x-github-delivery"].decode(), headers[b"x-github-event"].decode(),
                    body.decode(), time.time()))
        db.execute("COMMIT")
        status = 202
    answer = b'{"status":"accepted"}'
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})


def fastapi_factory():  # noqa: ANN201 - uvicorn --factory entry
    """A minimal FastAPI app: one ``POST /webhooks/github`` route that reads the body and
    answers 202 — the usual shape of a FastAPI webhook receiver before any work (for context;
    the goal is measured against the raw ASGI ``bare_app``)."""
    app = FastAPI()

    @app.post("/webhooks/github")
    async def receive(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"status": "accepted"}, status_code=202)

    return app


def relay_factory():  # noqa: ANN201 - uvicorn --factory entry
    """The relay app from the environment, as ``relay serve`` builds it."""
    from relay.service import create_app
    from relay.settings import get_settings

    return create_app(get_settings())


class _Parked:
    """A task queue that takes each accepted delivery and starts nothing: its row stays
    ``received`` (restart recovery would run it).  Only for ``relay_intake_factory``."""

    def submit_delivery(self, delivery_id: str) -> None:
        pass

    def close(self, timeout: float | None = None) -> None:
        pass


def relay_intake_factory():  # noqa: ANN201 - uvicorn --factory entry
    """The relay app as ``relay_factory`` builds it, with processing parked (``_Parked``): the
    intake path alone — verify, parse, group-committed insert, 202 — to split the relay's
    number into what intake costs and what processing each delivery in the same process (its
    claim, run lookup and final mark, sharing the GIL and the SQLite write lock) costs."""
    from relay.service import create_app
    from relay.settings import get_settings

    return create_app(get_settings(), queue=_Parked())


SEQ_PLACEHOLDER = "0" * 12


def payload_bytes(target: int = 25_000) -> bytes:
    """A ``pull_request`` ``opened`` body padded (PR description) to about ``target`` bytes."""
    payload = {
        "action": "opened", "number": 4242,
        "pull_request": {"number": 4242, "title": "Fix softmax on privateuse1", "state": "open",
                         "html_url": "https://github.com/pytorch/pytorch/pull/4242",
                         "head": {"sha": "a" * 40, "ref": "feature"},
                         "base": {"sha": "b" * 40, "ref": "main"},
                         "labels": [{"name": "module: nn"}], "merged": False, "body": ""},
        "repository": {"full_name": "pytorch/pytorch", "id": 65600975},
        "sender": {"login": "octocat"},
        # a per-request sequence number (``Conn``): the relay answers a byte-identical body
        # under a new delivery id as a duplicate, so every delivery must differ
        "bench_seq": SEQ_PLACEHOLDER,
    }
    base = len(json.dumps(payload).encode())
    payload["pull_request"]["body"] = "lorem ipsum " * ((target - base) // 12)
    return json.dumps(payload).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(target: str, env: dict[str, str], factory: bool,
                 http: str = "auto") -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", target, "--app-dir", str(ROOT / "bench"),
           "--host", "127.0.0.1", "--port", str(port), "--no-access-log", "--log-level", "warning",
           "--http", http, "--loop", "asyncio" if http == "h11" else "auto"]
    if factory:
        cmd.append("--factory")
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{target} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{target} did not start")


_SEQ = itertools.count(1)


class Conn:
    """One keep-alive HTTP/1.1 connection sending signed deliveries."""

    def __init__(self, port: int, body: bytes) -> None:
        self.port, self.body = port, body
        self.at = body.index(f'"{SEQ_PLACEHOLDER}"'.encode()) + 1  # the sequence digits
        self.head = ("POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nX-GitHub-Event: pull_request\r\n"
                     "X-GitHub-Hook-ID: 1\r\n"
                     f"Content-Length: {len(body)}\r\n")

    def _unique(self) -> tuple[bytes, str]:
        """The body with a fresh sequence number (same length) and its signature header."""
        seq = f"{next(_SEQ):012d}".encode()
        body = self.body[:self.at] + seq + self.body[self.at + len(seq):]
        sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        return body, f"X-Hub-Signature-256: {sig}\r\n"

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def send(self) -> int:
        body, sig = self._unique()
        delivery = f"X-GitHub-Delivery: {uuid.uuid4()}\r\n\r\n"
        self.writer.write(self.head.encode() + sig.encode() + delivery.encode() + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await self.reader.readexactly(length)
        return int(status_line.split()[1])

    def close(self) -> None:
        self.writer.close()


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


async def closed_loop(port: int, body: bytes, seconds: float, concurrency: int) -> dict:
    lat: list[float] = []
    bad = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal bad
        conn = Conn(port, body)
        await conn.open()
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            status = await conn.send()
            lat.append((time.perf_counter() - t0) * 1000)
            bad += status != 202
        conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    return {"rps": len(lat) / elapsed, "p50": pct(lat, 50), "p99": pct(lat, 99), "n": len(lat),
            "errors": bad}


async def open_loop(port: int, body: bytes, seconds: float, rate: float) -> dict:
    pool: asyncio.Queue[Conn] = asyncio.Queue()
    for _ in range(64):
        conn = Conn(port, body)
        await conn.open()
        pool.put_nowait(conn)
    lat: list[float] = []
    bad = 0
    tasks = []

    async def one(scheduled: float) -> None:
        nonlocal bad
        conn = await pool.get()
        try:
            status = await conn.send()
        finally:
            pool.put_nowait(conn)
        lat.append((time.perf_counter() - scheduled) * 1000)
        bad += status != 202

    start = time.perf_counter()
    n = int(seconds * rate)
    for i in range(n):
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(scheduled)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    while not pool.empty():
        pool.get_nowait().close()
    return {"rps": n / elapsed, "p50": pct(lat, 50), "p99": pct(lat, 99), "n": n, "errors": bad}


def delivery_states(database: str | None) -> dict[str, int]:
    """``{status: count}`` of the relay's ``deliveries`` table (a read in WAL mode does not
    block the server), or ``{}`` for a server without one."""
    import sqlite3

    if database is None or not Path(database).exists():
        return {}
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT status, count(*) FROM deliveries GROUP BY status"))
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def measure(name: str, port: int, body: bytes, args: argparse.Namespace,
            database: str | None = None) -> dict:
    """The open loop first, on a server that has only had a short warm-up: after the closed
    loop the relay still works off thousands of accepted deliveries in the background, and the
    latency at ``--rate`` would measure that backlog rather than the rate.  For a relay, the
    deliveries' states right after the closed loop (how far processing kept up)."""
    asyncio.run(open_loop(port, body, 1.0, args.rate))  # warm-up at the rate
    opened = asyncio.run(open_loop(port, body, args.seconds, args.rate))
    closed = asyncio.run(closed_loop(port, body, args.seconds, args.concurrency))
    return {"name": name, "closed": closed, "open": opened, "states": delivery_states(database)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--http", choices=("auto", "h11", "httptools"), default="auto",
                    help="uvicorn's HTTP parser for both servers (auto: httptools + uvloop, as "
                         "`relay serve` runs; h11: the pure-Python parser and asyncio loop)")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON on stdout")
    args = ap.parse_args()
    body = payload_bytes()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        allowlist = Path(tmp) / "allowlist.yaml"
        allowlist.write_text("L1: []\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RELAY_WEBHOOK_SECRET": SECRET,
               "RELAY_STATE_DIR": tmp, "RELAY_ALLOWLIST": str(allowlist),
               "BENCH_DURABLE_DB": f"{tmp}/durable.db"}
        for name, target, factory in (("bare uvicorn", "intake:bare_app", False),
                                      ("bare FastAPI", "intake:fastapi_factory", True),
                                      ("durable min", "intake:durable_app", False),
                                      ("relay intake", "intake:relay_intake_factory", True),
                                      ("relay", "intake:relay_factory", True)):
            # each relay its own database: the parked relay leaves its deliveries `received`,
            # and a relay started on them would spend the run on their restart recovery
            database = None if args.database_url else f"{tmp}/{name.replace(' ', '-')}.db"
            server_env = {**env, "RELAY_DATABASE_URL": args.database_url or f"sqlite:///{database}"}
            proc, port = start_server(target, server_env, factory, args.http)
            try:
                results.append(measure(name, port, body, args, database))
            finally:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
    bare, fastapi, durable, intake_only, relay = results
    if args.json:
        print(json.dumps({"body_bytes": len(body), "results": results}, indent=2))
        return
    out = sys.stderr
    print(f"uvicorn --http {args.http}; body {len(body)} bytes; closed loop {args.concurrency} connections, open loop "
          f"{args.rate:.0f} req/s; {args.seconds:.0f} s each; {os.cpu_count()} CPUs", file=out)
    print(f"{'server':14} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} | {'@rate req/s':>11} "
          f"{'p50 ms':>8} {'p99 ms':>8} {'errors':>6}", file=out)
    for r in results:
        c, o = r["closed"], r["open"]
        print(f"{r['name']:14} {c['rps']:9.0f} {c['p50']:8.2f} {c['p99']:8.2f} | {o['rps']:11.0f} "
              f"{o['p50']:8.2f} {o['p99']:8.2f} {c['errors'] + o['errors']:6d}", file=out)
    ratio = relay["closed"]["rps"] / durable["closed"]["rps"]
    print(f"relay/minimal durable receiver throughput {ratio:.2f}x (goal >= 0.8x); relay p99 at "
          f"{args.rate:.0f} req/s {relay['open']['p99']:.1f} ms (goal <= 50 ms)", file=out)
    print(f"decomposition: relay intake alone (processing parked) / minimal durable "
          f"{intake_only['closed']['rps'] / durable['closed']['rps']:.2f}x; processing in the same "
          f"process takes the relay from {intake_only['closed']['rps']:.0f} to "
          f"{relay['closed']['rps']:.0f} req/s", file=out)
    states = relay["states"]
    if states:
        done = sum(n for k, n in states.items() if k in ("processed", "ignored", "failed"))
        print(f"relay processing: {done} of {sum(states.values())} accepted deliveries final when "
              f"the closed loop ended ({states.get('received', 0)} still queued, "
              f"{states.get('processing', 0)} in hand)", file=out)
    print(f"for context: relay/bare ASGI {relay['closed']['rps'] / bare['closed']['rps']:.2f}x, "
          f"relay/bare FastAPI route {relay['closed']['rps'] / fastapi['closed']['rps']:.2f}x",
          file=out)


if __name__ == "__main__":
    main()
