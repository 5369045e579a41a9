"""The pieces of ``bench/faults.py``: real ``relay serve`` / ``relay worker`` processes, the fake
GitHub on loopback, a paced webhook load, and the accounting of one fault scenario.

Accounting (per scenario, over the deliveries the load sent):

* ``acked``: answered 2xx (GitHub counts those delivered and never sends them again);
* ``lost``: acked but not in the database at the end — must be 0;
* ``stuck``: acked and not ``processed`` / ``ignored`` / ``failed`` when the drain gave up —
  must be 0;
* ``failed``: acked and ended ``failed`` (visible, with the error; counted, not lost);
* ``dup_fx``: side effects done twice — repository_dispatches GitHub accepted more than once
  for one delivery id, plus runs stored more than once — counted (at-least-once, documented);
* ``drain_s``: seconds from the end of the fault and the load until every acked delivery is
  final;
* ``unsent``: dispatch rows of acked deliveries that did not end ``sent`` (``failed`` with the
  error — e.g. GitHub still down after the last attempt — or, a bug, ``pending``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relay.github.signing import sign  # noqa: E402

SECRET = "faults-webhook-secret-0123456789"
FINAL = ("processed", "ignored", "failed")
BIN = Path(sys.executable).parent


def exit_on_sigterm() -> None:
    """SIGTERM raises ``SystemExit`` so the ``finally`` blocks stop the relay/worker processes
    (they run in their own sessions and would outlive a killed harness)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def relay_env(state: Path, database_url: str, github_url: str, **extra: str) -> dict[str, str]:
    """The environment of a relay or worker process of a scenario: fake GitHub, one external
    downstream at L2 (``acme/l2-ci``; the local backend is not listed unless ``extra`` sets
    ``RELAY_ALLOWLIST``), short recovery and retry periods."""
    allowlist = state / "allowlist.yaml"
    if not allowlist.exists():
        allowlist.write_text("L2: [acme/l2-ci]\n")
    env = {**os.environ, "RELAY_WEBHOOK_SECRET": SECRET, "RELAY_DATABASE_URL": database_url,
           "RELAY_GITHUB_API_URL": github_url, "RELAY_ALLOWLIST": str(allowlist),
           "RELAY_STATE_DIR": str(state), "RELAY_OUTBOX_POLL_S": "0.2",
           "RELAY_RECOVER_INTERVAL_S": "2", "RELAY_DELIVERY_RETRY_S": "2",
           "RELAY_DISPATCH_MAX_WAIT_S": "2", "RELAY_WORKERS": "2",
           "RELAY_VISIBILITY_TIMEOUT_S": "20", "RELAY_RESTORE_INTERVAL_S": "2", "RELAY_LEASE_S": "6",
           "PYTHONPATH": str(ROOT)}
    env.update(extra)
    return env


@dataclass
class Proc:
    """A ``relay serve`` or ``relay worker`` subprocess in its own process group."""

    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None
    url: str = ""

    def start(self, timeout: float = 180.0) -> Proc:
        port = free_port() if self.argv[0] == "serve" else 0
        argv = [str(BIN / "relay"), *self.argv] + (["--port", str(port)] if port else [])
        self.proc = subprocess.Popen(argv, env=self.env, stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        if port:
            self.url = f"http://127.0.0.1:{port}"
            self._wait_healthy(timeout)
        return self

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.argv[0]} exited:\n{self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"relay serve not healthy in {timeout} s:\n{self.log.read_text()[-2000:]}")

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(20)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill9()


def push_body(n: int, files: list[str] | None = None) -> dict[str, Any]:
    """A push of the upstream with one commit touching ``files`` (never a branch creation:
    ``before`` is not forty zeros)."""
    before, after = f"{2 * n + 1:040x}", f"{2 * n + 2:040x}"
    return {"ref": "refs/heads/main", "before": before, "after": after,
            "deleted": False, "repository": {"full_name": "pytorch/pytorch"},
            "commits": [{"id": after, "added": [], "removed": [],
                         "modified": files or [f"docs/page_{n}.md"]}]}


@dataclass
class Load:
    """Sends ``rate`` deliveries/s for ``seconds`` to ``url()`` (looked up per request, so a
    restarted relay on a new port is followed); ``codes[id]`` is each answer (0: no answer)."""

    url: Callable[[], str]
    rate: float
    seconds: float
    body: Callable[[int], tuple[str, dict[str, Any]]] = lambda n: ("push", push_body(n))
    codes: dict[str, int] = field(default_factory=dict)
    _thread: threading.Thread | None = None

    def start(self) -> Load:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _send(self, client: httpx.Client, n: int) -> None:
        event, payload = self.body(n)
        data = json.dumps(payload).encode()
        delivery = f"f-{uuid.uuid4()}"
        headers = {"Content-Type": "application/json", "X-GitHub-Event": event,
                   "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sign(data, SECRET)}
        self.codes[delivery] = -1  # sent, no answer yet
        try:
            code = client.post(self.url() + "/webhooks/github", content=data,
                               headers=headers).status_code
        except httpx.HTTPError:
            code = 0
        self.codes[delivery] = code

    def _run(self) -> None:
        """Open loop: request ``n`` leaves at ``n / rate`` whatever the answers' latency (up to
        16 in flight), so a slow relay does not lower the offered rate."""
        from concurrent.futures import ThreadPoolExecutor

        client = httpx.Client(timeout=15.0, limits=httpx.Limits(max_connections=16))
        start = time.monotonic()
        n = 0
        with ThreadPoolExecutor(16) as pool:
            while (now := time.monotonic()) - start < self.seconds:
                due = start + n / self.rate
                if due > now:
                    time.sleep(due - now)
                pool.submit(self._send, client, n)
                n += 1
        client.close()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


@dataclass
class Row:
    scenario: str
    sent: int
    acked: int
    lost: int
    stuck: int
    failed: int
    dup_fx: int
    drain_s: float
    unsent: int = 0
    note: str = ""


def final_states(database_url: str, ids: list[str]) -> dict[str, str]:
    """``{delivery_id: status}`` of ``ids`` found in the database (one short connection)."""
    from sqlalchemy import select

    from relay.store import make_engine, make_session_factory
    from relay.store.tables import DeliveryRecord

    engine = make_engine(database_url)
    try:
        with make_session_factory(engine)() as s:
            rows = s.execute(select(DeliveryRecord.delivery_id, DeliveryRecord.status)
                             .where(DeliveryRecord.delivery_id.in_(ids))).all()
        return dict(rows)  # type: ignore[arg-type]
    finally:
        engine.dispose()


def unsent(database_url: str, ids: list[str]) -> int:
    """Dispatch rows of ``ids`` that did not end ``sent`` (failed with their error, or pending)."""
    from sqlalchemy import func, select

    from relay.store import make_engine, make_session_factory
    from relay.store.tables import DispatchRecord

    engine = make_engine(database_url)
    try:
        with make_session_factory(engine)() as s:
            return int(s.scalar(select(func.count()).select_from(DispatchRecord).where(
                DispatchRecord.delivery_id.in_(ids), DispatchRecord.status != "sent")) or 0)
    finally:
        engine.dispose()


def runs_twice(database_url: str) -> int:
    """Runs stored more than once for one delivery (a side effect done twice)."""
    from sqlalchemy import func, select

    from relay.store import make_engine, make_session_factory
    from relay.store.tables import RunRecord

    engine = make_engine(database_url)
    try:
        with make_session_factory(engine)() as s:
            counts = s.execute(select(func.count()).select_from(RunRecord)
                               .where(RunRecord.delivery_id.is_not(None))
                               .group_by(RunRecord.delivery_id)).scalars().all()
        return sum(c - 1 for c in counts if c > 1)
    finally:
        engine.dispose()


def account(name: str, load: Load, database_url: str, dispatches: list[tuple[str, dict]],
            fault_end: float, timeout: float, note: str = "") -> Row:
    """Wait (≤ ``timeout`` s) until every acked delivery is final, then count (module doc)."""
    acked = [d for d, code in load.codes.items() if 200 <= code < 300]
    states: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while True:
        try:
            states = final_states(database_url, acked)
        except Exception as exc:  # noqa: BLE001 - the database may still be coming back
            print(f"  [{name}] reading states: {type(exc).__name__}", file=sys.stderr)
        if all(states.get(d) in FINAL for d in acked) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    drained = time.monotonic() - max(fault_end, 0.0)
    for d in acked:
        if states.get(d) not in FINAL:
            print(f"  [{name}] {d} is {states.get(d, 'NOT STORED')}", file=sys.stderr)
    sent_to = Counter(p["client_payload"]["delivery_id"] for _, p in dispatches)
    dup = sum(c - 1 for c in sent_to.values() if c > 1)
    try:
        dup += runs_twice(database_url)
    except Exception:  # noqa: BLE001 - no runs table rows to count
        pass
    return Row(name, len(load.codes), len(acked), sum(d not in states for d in acked),
               sum(d in states and states[d] not in FINAL for d in acked),
               sum(states.get(d) == "failed" for d in acked), dup, round(drained, 1),
               unsent(database_url, acked), note)


def print_table(rows: list[Row]) -> None:
    head = ("scenario", "sent", "acked", "lost", "stuck", "failed", "dup_fx", "drain_s",
            "unsent", "note")
    cells = [head] + [(r.scenario, r.sent, r.acked, r.lost, r.stuck, r.failed, r.dup_fx,
                       r.drain_s, r.unsent, r.note) for r in rows]
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(head))]
    for i, c in enumerate(cells):
        print("  ".join(str(v).ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
