"""Posting a ``Run``'s results to the dashboard in CRCR's HUD body shape.

Target: ``{settings.dashboard_url}/api/crcr/results``.  When ``dashboard_url`` is unset the
dashboard is this relay: the body goes through the relay's own ASGI app in-process, with
``httpx.AsyncClient(transport=httpx.ASGITransport(app))`` driven by ``asyncio.run`` (httpx's
ASGI transport is async-only; a helper thread is used if the caller already runs an event
loop).  This exercises the same route, validation and storage as a remote post.

Retries (CRCR's rule): 5xx and transport errors are retried 3 times, waiting 1, 2, 4 s
(``wait`` is injectable for tests); a 4xx is raised at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential
from tenacity.wait import wait_base

from relay.errors import HudBodyTooLarge, HudPostError
from relay.reporting.models import HUD_BODY_CAP, MAX_FAILED_TESTS, HudBody
from relay.domain.run import Run
from relay.settings import Settings

__all__ = ["build_hud_body", "post_results", "make_sender", "RESULTS_PATH", "BAD_OUTCOMES"]

log = logging.getLogger(__name__)

RESULTS_PATH = "/api/crcr/results"
BAD_OUTCOMES = ("failed", "crashed", "timed_out")


def build_hud_body(
    run: Run,
    settings: Settings,
    *,
    level: str = "L1",
    event_type: str | None = None,
    queue_ms: float | None = None,
) -> HudBody:
    """The HUD body for ``run``.

    ``test_results``: ``failed`` = failed + crashed + timed_out, ``skipped`` = skipped,
    ``passed`` = every other outcome (passed, xfailed, xpassed, flaky).  ``failed_tests`` lists
    at most 1,000 ids.  ``event_type`` defaults to ``"replay"`` for replays and
    ``"pull_request"`` for webhook runs; ``delivery_id`` to ``run.delivery_id`` or
    ``"replay-<run id>"``.  ``queue_ms`` defaults to 0 (a replay does not queue).

    A regression run adds, inside ``workflow`` (the one part of the shape open to extra keys,
    ``relay.reporting.models.Workflow``): ``verdicts`` (counts per class) and ``new_tests`` (ids of
    NEW verdicts, at most 1,000); a run with a culprit adds ``culprit``
    ``{commit, tests (≤ 1,000), rounds, steps: [{commit, failed (count), environment}]}``.
    """
    counts = run.counts or Run.count_outcomes(run.results)
    failed = sum(counts.get(o, 0) for o in BAD_OUTCOMES)
    skipped = counts.get("skipped", 0)
    passed = sum(counts.values()) - failed - skipped
    failed_ids = [r.id for r in run.results if r.outcome in BAD_OUTCOMES][:MAX_FAILED_TESTS]
    exec_ms = max(0.0, (run.finished_at - run.started_at).total_seconds() * 1000.0)
    extra: dict[str, Any] = {}
    if run.verdict_counts:
        extra["verdicts"] = dict(run.verdict_counts)
        extra["new_tests"] = [v.id for v in run.verdicts if v.verdict == "NEW"][:MAX_FAILED_TESTS]
    if run.culprit is not None:
        extra["culprit"] = {
            "commit": run.culprit.commit, "tests": run.culprit.tests[:MAX_FAILED_TESTS],
            "rounds": run.culprit.rounds,
            "steps": [{"commit": s.commit, "failed": len(s.failed), "environment": s.environment}
                      for s in run.culprit.steps]}
    return HudBody.model_validate({
        "trusted": {
            "ci_metrics": {"queue_time_ms": queue_ms or 0.0, "execution_time_ms": exec_ms},
            "verified_repo": run.backend,
            "downstream_repo_level": level,
        },
        "untrusted": {"callback_payload": {
            "event_type": event_type or ("replay" if run.trigger == "replay" else "pull_request"),
            "delivery_id": run.delivery_id or f"replay-{run.id}",
            "payload": {"base": run.base, "head": run.head, "upstream": run.upstream},
            "workflow": {
                "status": "completed",
                "conclusion": run.conclusion,
                "name": run.backend,
                "run_id": run.id,
                "run_attempt": 1,
                "test_results": {"passed": passed, "failed": failed, "skipped": skipped},
                "failed_tests": failed_ids,
                **extra,
            },
        }},
    })


class _Retryable(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"dashboard answered {response.status_code}")
        self.response = response


def _in_fresh_loop(fn: Callable[[], Any]) -> Any:
    """Run the coroutine made by ``fn`` to completion whether or not a loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(fn())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(fn())).result()


def _sender(settings: Settings, app: Any, transport: httpx.BaseTransport | None,
            ) -> tuple[Callable[[bytes], httpx.Response], Callable[[], None], str]:
    headers = {"Content-Type": "application/json", "User-Agent": "spyre-relay"}
    token = settings.results_token()
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if settings.dashboard_url:
        url = settings.dashboard_url + RESULTS_PATH
        client = httpx.Client(timeout=30.0, transport=transport, headers=headers)
        return (lambda body: client.post(url, content=body)), client.close, url

    owned = app is None
    if owned:
        from relay.service import create_app  # lazy: the app imports this module

        app = create_app(settings, webhooks_enabled=False)

    async def _post(body: bytes) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://relay.inprocess", headers=headers) as c:
            return await c.post(RESULTS_PATH, content=body)

    def _close() -> None:
        if owned:
            app.state.engine.dispose()

    return (lambda body: _in_fresh_loop(lambda: _post(body))), _close, "in-process" + RESULTS_PATH


def make_sender(settings: Settings, app: Any = None,
                transport: httpx.BaseTransport | None = None,
                ) -> tuple[Callable[[bytes], httpx.Response], Callable[[], None], str]:
    """``(send, close, url)``: ``send(body_bytes)`` makes one POST to the dashboard (no
    retries; the outbox retries) — remote when ``settings.dashboard_url`` is set, else
    in-process through ``app``."""
    return _sender(settings, app, transport)


def post_results(
    run: Run,
    settings: Settings,
    *,
    level: str = "L1",
    event_type: str | None = None,
    queue_ms: float | None = None,
    app: Any = None,
    wait: wait_base | None = None,
    transport: httpx.BaseTransport | None = None,
) -> None:
    """Post ``run``'s HUD body (see ``build_hud_body``) to the dashboard.

    ``app``: the relay ASGI app to post to in-process when ``settings.dashboard_url`` is unset
    (default: a new ``create_app(settings, webhooks_enabled=False)`` on the same database).
    Raises ``HudBodyTooLarge`` (> 2 MB) or ``HudPostError`` (4xx, or 5xx after 3 retries).
    """
    body = build_hud_body(run, settings, level=level, event_type=event_type, queue_ms=queue_ms)
    data = json.dumps(body.model_dump(mode="json"), separators=(",", ":")).encode("utf-8")
    if len(data) > HUD_BODY_CAP:
        raise HudBodyTooLarge(f"HUD body is {len(data)} bytes, cap {HUD_BODY_CAP}")
    send, close, url = _sender(settings, app, transport)
    retrying = Retrying(
        stop=stop_after_attempt(4),
        wait=wait if wait is not None else wait_exponential(multiplier=1, exp_base=2, max=4),
        retry=retry_if_exception(lambda e: isinstance(e, (_Retryable, httpx.TransportError))),
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                resp = send(data)
                if resp.status_code >= 500:
                    raise _Retryable(resp)
    except _Retryable as exc:
        raise HudPostError(exc.response.status_code, url, exc.response.text) from None
    except httpx.TransportError as exc:
        raise HudPostError(0, url, f"{type(exc).__name__}: {exc}") from None
    finally:
        close()
    if resp.status_code >= 400:
        raise HudPostError(resp.status_code, url, resp.text)
    log.info("posted results of run %s to %s (%d bytes)", run.id, url, len(data))


def enqueue_result(session: Any, run: Run, delivery: Any, settings: Settings,
                   level: str | None) -> bool:
    """Write ``run``'s HUD body as an outbox row in ``session``'s transaction (the caller
    commits it with the run) when the local backend's ``level`` reports to the dashboard
    (L2–L4, as CRCR); ``queue_ms`` is the delivery's wait from acceptance to the run's start.
    Returns whether a row was written."""
    from relay.store.outbox import enqueue

    if level not in ("L2", "L3", "L4"):
        return False
    queue_ms = max(0.0, (run.started_at - delivery.received_at).total_seconds() * 1000.0)
    body = build_hud_body(run, settings, level=level, event_type=delivery.event, queue_ms=queue_ms)
    enqueue(session, "hud", body.model_dump(mode="json"))
    return True
