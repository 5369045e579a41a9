"""Restart recovery with a real crash: ``relay serve`` (uvicorn + ``create_app``) in a
subprocess is killed with SIGKILL after answering 202 and while processing the delivery (the
fake GitHub holds the repository_dispatch call); a new ``relay serve`` on the same database
processes it to the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from relay.store import get_delivery, make_engine, make_session_factory
from relay.store.dispatches import list_dispatches
from tests.fakes.github import WebhookSender, pull_request_payload
from tests.service.conftest import SECRET


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    relay_bin = Path(sys.executable).parent / "relay"
    proc = subprocess.Popen([str(relay_bin), "serve", "--port", str(port)], env=env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90  # startup imports torch: seconds on a quiet machine, tens under load
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-2000:]
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("relay serve did not become healthy:\n" + log.read_text()[-2000:])


def serve_env(tmp_path: Path, gh_url: str) -> tuple[dict[str, str], str, Path]:
    """The environment of a ``relay serve`` subprocess dispatching to the fake GitHub
    (``acme/l2-ci`` at L2), its database URL, and its log file."""
    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text("L2: [acme/l2-ci]\n")
    db = f"sqlite:///{tmp_path / 'relay.db'}"
    env = {**os.environ, "RELAY_WEBHOOK_SECRET": SECRET, "RELAY_DATABASE_URL": db,
           "RELAY_GITHUB_API_URL": gh_url, "RELAY_ALLOWLIST": str(allowlist),
           "RELAY_STATE_DIR": str(tmp_path), "RELAY_OUTBOX_POLL_S": "0.1",
           # the killed attempt's lease runs out 2 s after its last heartbeat (default 30 s):
           # only then does the restarted relay take its delivery (relay.store.leases)
           "RELAY_LEASE_S": "2", "RELAY_RECOVER_INTERVAL_S": "1"}
    return env, db, tmp_path / "serve.log"


def test_kill9_between_ack_and_processing_then_restart(tmp_path, fake_github) -> None:
    fake, gh_url = fake_github
    fake.dispatch_hold = True
    env, db, log = serve_env(tmp_path, gh_url)

    proc, url = _serve(env, log)
    sender = WebhookSender(url, SECRET)
    try:
        resp = sender.send("pull_request", pull_request_payload(), delivery_id="k9-1")
        assert resp.status_code == 202
        assert fake.dispatch_arrived.wait(15), "processing never reached GitHub"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        sender.close()
        if proc.poll() is None:
            proc.kill()

    engine = make_engine(db)
    sf = make_session_factory(engine)
    with sf() as s:
        assert get_delivery(s, "k9-1").status == "processing"
        (row,) = list_dispatches(s, "k9-1")
        assert row.status == "pending"  # written before the call
    restart_and_finish(env, log, fake, sf, "k9-1")
    engine.dispose()


def restart_and_finish(env: dict[str, str], log: Path, fake, sf, delivery_id: str) -> None:
    """Release the fake GitHub's held dispatch (the old process's call is dropped), start
    ``relay serve`` again and wait until restart recovery has processed ``delivery_id``: the
    delivery ``processed``, its dispatch ``sent`` once to ``acme/l2-ci``."""
    fake.dispatch_hold = False
    fake.dispatch_release.set()
    fake.dispatches.clear()
    proc2, _url2 = _serve(env, log)
    try:
        fake.wait_dispatches(1, timeout=20)
        deadline = time.monotonic() + 10
        while True:
            with sf() as s:
                status = get_delivery(s, delivery_id).status
                (row,) = list_dispatches(s, delivery_id)
            if status == "processed" and row.status == "sent":
                break
            assert time.monotonic() < deadline, (status, row.status)
            time.sleep(0.05)
        assert [r for r, _ in fake.dispatches] == ["acme/l2-ci"]
        assert fake.dispatches[0][1]["client_payload"]["delivery_id"] == delivery_id
    finally:
        proc2.send_signal(signal.SIGTERM)
        try:
            proc2.wait(10)
        except subprocess.TimeoutExpired:
            proc2.kill()
