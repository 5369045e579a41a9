"""``relay serve`` stops promptly on SIGTERM while its in-process queue is busy with a delivery;
the delivery stays in the database and a restarted ``relay serve`` processes it to the end."""

from __future__ import annotations

import signal
import time

from relay.store import get_delivery, make_engine, make_session_factory
from tests.fakes.github import WebhookSender, pull_request_payload
from tests.service.conftest import SECRET
from tests.service.test_kill9 import _serve, restart_and_finish, serve_env

#: What "prompt" means here: uvicorn's own shutdown plus the relay's bounded grace period.
PROMPT_S = 3.0


def test_sigterm_while_processing_stops_promptly_and_restart_finishes(tmp_path, fake_github) -> None:
    fake, gh_url = fake_github
    fake.dispatch_hold = True  # the delivery in hand blocks in its repository_dispatch call
    env, db, log = serve_env(tmp_path, gh_url)

    proc, url = _serve(env, log)
    sender = WebhookSender(url, SECRET)
    try:
        assert sender.send("pull_request", pull_request_payload(), delivery_id="term-1").status_code == 202
        assert fake.dispatch_arrived.wait(15), "processing never reached GitHub"
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
        elapsed = time.monotonic() - started
    finally:
        sender.close()
        if proc.poll() is None:
            proc.kill()
    assert rc in (0, -signal.SIGTERM), log.read_text()[-2000:]  # uvicorn re-raises the signal it caught
    print(f"relay serve stopped {elapsed:.2f} s after SIGTERM")
    assert elapsed <= PROMPT_S, f"relay serve took {elapsed:.1f} s to stop:\n{log.read_text()[-2000:]}"

    engine = make_engine(db)
    sf = make_session_factory(engine)
    try:
        with sf() as s:
            assert get_delivery(s, "term-1").status == "processing"
        restart_and_finish(env, log, fake, sf, "term-1")
    finally:
        engine.dispose()


def test_in_process_queue_close_abandons_a_busy_delivery_after_the_timeout(caplog) -> None:
    import threading

    from relay.worker.queue import InProcessQueue

    release, started, handled = threading.Event(), threading.Event(), []

    def handler(delivery_id: str) -> None:
        handled.append(delivery_id)
        started.set()
        release.wait(30)

    q = InProcessQueue(handler)
    q.submit_delivery("busy")
    q.submit_delivery("queued")
    assert started.wait(5)
    t0 = time.monotonic()
    with caplog.at_level("INFO", logger="relay.worker.queue"):
        q.close(timeout=0.3)
    assert time.monotonic() - t0 < 2.0
    assert "delivery busy was still processing" in caplog.text
    assert "1 deliveries left for restart recovery" in caplog.text
    release.set()
    time.sleep(0.1)
    assert handled == ["busy"]  # the backlog is left to restart recovery, not run while closing
