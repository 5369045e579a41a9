"""The webhook side of the fake GitHub: repository hooks that deliver to the relay and log each
attempt, and the hook-deliveries REST API (list with cursor paging, redeliver) that
``relay catch-up`` reads.  Mixed into ``tests.fakes.github.FakeGitHub``, whose ``hooks``,
``redeliveries``, ``_lock``, ``_http`` and ``_ids`` fields it uses.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from relay.github.hookshot import delivery_headers

__all__ = ["FakeHook", "HookDeliveries"]


@dataclass
class FakeHook:
    """A repository webhook: where it delivers, its secret, and its delivery log — GitHub's
    ``hook-delivery-item`` dicts, one per attempt — with each attempt's ``(event, body)``."""

    id: int
    repo: str
    url: str
    secret: str
    log: list[dict[str, Any]] = field(default_factory=list)
    bodies: dict[int, tuple[str, bytes]] = field(default_factory=dict)


class HookDeliveries:
    """Hook delivery methods and routes of the fake GitHub (see the module docstring)."""

    hooks: dict[int, FakeHook]
    redeliveries: list[int]
    _lock: Any
    _http: Any
    _ids: Any

    def add_hook(self, repo: str, url: str, secret: str, hook_id: int = 424242) -> FakeHook:
        """A webhook of ``repo`` delivering to ``url`` (the relay's ``/webhooks/github``)."""
        self.hooks[hook_id] = FakeHook(hook_id, repo, url, secret)
        return self.hooks[hook_id]

    def deliver(self, hook_id: int, event: str, payload: Any, *, guid: str | None = None,
                delivered_at: datetime | None = None) -> dict[str, Any]:
        """Send one delivery of hook ``hook_id`` as GitHub does (headers, production signer)
        and log the attempt; returns the log entry.  No answer (connection refused, over 10 s)
        logs ``status_code`` 0.  ``delivered_at`` (default now) back-dates the entry."""
        return self._attempt(self.hooks[hook_id], event, json.dumps(payload).encode(),
                             guid or str(uuid.uuid4()), redelivery=False, at=delivered_at)

    def _attempt(self, hook: FakeHook, event: str, body: bytes, guid: str, *, redelivery: bool,
                 at: datetime | None = None) -> dict[str, Any]:
        headers = delivery_headers(event, body, hook.secret, delivery_id=guid, hook_id=str(hook.id))
        with self._lock:
            self._http = self._http or httpx.Client(timeout=10.0)
        started = time.monotonic()
        try:  # GitHub counts an answer slower than 10 s as failed
            code = self._http.post(hook.url, content=body, headers=headers).status_code
            status = "OK" if 200 <= code < 300 else f"Invalid HTTP Response: {code}"
        except httpx.TimeoutException:
            code, status = 0, "timed out"
        except httpx.TransportError:
            code, status = 0, "failed to connect"
        payload = json.loads(body)
        action = payload.get("action") if isinstance(payload, dict) else None
        entry = {"id": next(self._ids), "guid": guid, "redelivery": redelivery,
                 "delivered_at": (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "duration": round(time.monotonic() - started, 3), "status": status,
                 "status_code": code, "event": event, "action": action,
                 "installation_id": None, "repository_id": 65600975, "throttled_at": None}
        with self._lock:
            hook.log.append(entry)
            hook.bodies[entry["id"]] = (event, body)
        return entry

    def _hook_delivery_routes(self, app: FastAPI, record: Any) -> None:
        """``GET .../hooks/{id}/deliveries`` (newest first; ``per_page`` ≤ 100, ``cursor`` from
        the ``Link`` header, ``redelivery`` filter) and ``POST .../deliveries/{id}/attempts``
        (202; re-sends the logged body with the same guid — synchronously, unlike GitHub, so
        tests need not wait; 422 for an attempt older than GitHub's 3 days)."""

        def hook_of(owner: str, name: str, hook_id: int) -> FakeHook | None:
            hook = self.hooks.get(hook_id)
            return hook if hook is not None and hook.repo == f"{owner}/{name}" else None

        @app.get("/repos/{owner}/{name}/hooks/{hook_id}/deliveries")
        def list_deliveries(owner: str, name: str, hook_id: int, request: Request) -> JSONResponse:
            if (failed := record(request)) is not None:
                return failed
            if (hook := hook_of(owner, name, hook_id)) is None:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            q = request.query_params
            with self._lock:
                items = sorted(hook.log, key=lambda e: (e["delivered_at"], e["id"]), reverse=True)
            if "redelivery" in q:
                items = [e for e in items if e["redelivery"] == (q["redelivery"] == "true")]
            per_page = min(int(q.get("per_page", 30)), 100)
            start = 0
            if "cursor" in q:
                ids = [f"v1_{e['id']}" for e in items]
                if q["cursor"] not in ids:
                    return JSONResponse({"message": "Bad cursor"}, status_code=400)
                start = ids.index(q["cursor"])
            page = items[start:start + per_page]
            headers = {}
            if start + per_page < len(items):
                nxt = request.url.include_query_params(
                    per_page=per_page, cursor=f"v1_{items[start + per_page]['id']}")
                headers["Link"] = f'<{nxt}>; rel="next"'
            return JSONResponse(page, headers=headers)

        @app.post("/repos/{owner}/{name}/hooks/{hook_id}/deliveries/{delivery_id}/attempts")
        def redeliver(owner: str, name: str, hook_id: int, delivery_id: int,
                      request: Request) -> JSONResponse:
            if (failed := record(request)) is not None:
                return failed
            hook = hook_of(owner, name, hook_id)
            if hook is None or delivery_id not in hook.bodies:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            entry = next(e for e in hook.log if e["id"] == delivery_id)
            age = datetime.now(UTC) - datetime.fromisoformat(
                entry["delivered_at"].replace("Z", "+00:00"))
            if age > timedelta(days=3):
                return JSONResponse({"message": "Validation Failed"}, status_code=422)
            self.redeliveries.append(delivery_id)
            event, body = hook.bodies[delivery_id]
            self._attempt(hook, event, body, entry["guid"], redelivery=True)
            return JSONResponse({}, status_code=202)
