"""A fake GitHub: REST endpoints we call (PR files, compare, repository_dispatch, check runs,
issues, issue comments) and a webhook sender.

The REST app is real HTTP (served by ``tests.fakes.live.LiveServer``) with GitHub's paging
rules: ``per_page`` (default 30, max 100), ``page`` (from 1), ``Link`` header with ``rel="next"``
and ``rel="last"``, at most 3,000 files per PR.  Deliveries are signed with the production
``relay.github.signing.sign`` (Zuul's ``tests/fakegithub.py`` habit).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from relay.github.hookshot import delivery_headers
from tests.fakes.github_crcr import CrcrRoutes
from tests.fakes.github_hooks import FakeHook, HookDeliveries

__all__ = ["FakeGitHub", "FakeHook", "WebhookSender", "pr_files", "pull_request_payload", "push_payload"]


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class FakeGitHub(HookDeliveries, CrcrRoutes):
    """State of the fake: ``pulls[(repo, number)]`` file lists, ``compares[(repo, base, head)]``,
    ``fail_with`` (statuses answered, one per request of any route, before normal service),
    ``compare_fail`` (the same for the compare API only, with headers), ``seen``."""

    pulls: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    compares: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)
    #: commit shas (oldest first) of ``(repo, base, head)`` listed by the compare API, paged
    #: like GitHub (``per_page`` ≤ 100, default 250 commits unpaged) with ``total_commits``
    compare_commits: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    #: files (with ``patch``) of ``(repo, sha)`` for ``GET /repos/{o}/{r}/commits/{sha}``
    #: (served by ``github_crcr``'s commit route), paged like GitHub: 300 files a page,
    #: ``Link`` rel="next", at most 3,000
    commit_files: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    fail_with: list[int] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    #: ``(repo, {"event_type", "client_payload"})`` per accepted dispatch (204)
    dispatches: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: answers given to dispatches before accepting: ``(status, headers)``
    dispatch_fail: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    #: answers given to compare requests before serving, one per request: ``(status, headers)``
    #: (a 5xx, a 403 with ``X-RateLimit-Remaining: 0`` — GitHub's primary rate limit, ...)
    compare_fail: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    #: when set, a dispatch request waits until ``dispatch_release`` is set (slow GitHub)
    dispatch_hold: bool = False
    dispatch_release: threading.Event = field(default_factory=threading.Event)
    dispatch_arrived: threading.Event = field(default_factory=threading.Event)
    #: check runs by id: ``{"repo", **fields}``; ``check_log``: (method, id, fields)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    check_log: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    #: comments per (repo, number): dicts with ``id`` and ``body``
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    #: issues per repo in creation order: ``{"number", "title", "body", "state", "html_url",
    #: "labels"}`` (entries with a ``pull_request`` key stand for PRs, as GitHub lists them)
    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: repository webhooks by id (``add_hook``; ``deliver`` sends and logs attempts) and the
    #: attempt ids asked to be redelivered, in order
    hooks: dict[int, FakeHook] = field(default_factory=dict)
    redeliveries: list[int] = field(default_factory=list)
    _lock: Any = field(default_factory=threading.Lock)
    _http: Any = None  # one httpx.Client for every delivery (a new client costs ~40 ms)
    _ids: Any = field(default_factory=lambda: itertools.count(1000))

    def __post_init__(self) -> None:
        self._crcr_state()

    def add_pull(self, repo: str, number: int, files: list[dict[str, Any]]) -> None:
        self.pulls[(repo, number)] = files

    def app(self) -> FastAPI:
        app = FastAPI()

        def _record(request: Request) -> JSONResponse | None:
            self.seen.append(Seen(request.method, request.url.path, dict(request.query_params),
                                  {k.lower(): v for k, v in request.headers.items()}))
            if self.fail_with:
                status = self.fail_with.pop(0)
                return JSONResponse({"message": "fake failure"}, status_code=status)
            return None

        @app.get("/repos/{owner}/{name}/pulls/{number}/files")
        def pr_files_route(owner: str, name: str, number: int, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            files = self.pulls.get((f"{owner}/{name}", number))
            if files is None:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            files = files[:3000]
            per_page = min(int(request.query_params.get("per_page", 30)), 100)
            page = max(int(request.query_params.get("page", 1)), 1)
            last = max(1, -(-len(files) // per_page))
            body = files[(page - 1) * per_page: page * per_page]
            links = []
            if page < last:
                nxt = request.url.include_query_params(per_page=per_page, page=page + 1)
                links.append(f'<{nxt}>; rel="next"')
                end = request.url.include_query_params(per_page=per_page, page=last)
                links.append(f'<{end}>; rel="last"')
            headers = {"Link": ", ".join(links)} if links else {}
            return JSONResponse(body, headers=headers)

        @app.get("/repos/{owner}/{name}/compare/{basehead}")
        def compare_route(owner: str, name: str, basehead: str, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            if self.compare_fail:
                status, headers = self.compare_fail.pop(0)
                return JSONResponse({"message": "fake compare failure"}, status_code=status, headers=headers)
            base, _, head = basehead.partition("...")
            key = (f"{owner}/{name}", base, head)
            files = self.compares.get(key)
            shas = self.compare_commits.get(key)
            if files is None and shas is None:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            shas = shas or []
            if "per_page" in request.query_params or "page" in request.query_params:
                per_page = min(int(request.query_params.get("per_page", 30)), 100)
                page = max(int(request.query_params.get("page", 1)), 1)
                listed = shas[(page - 1) * per_page: page * per_page]
            else:
                listed = shas[:250]
            return JSONResponse({"status": "ahead", "files": (files or [])[:300],
                                 "total_commits": len(shas),
                                 "commits": [{"sha": s, "commit": {"message": ""}} for s in listed]})

        @app.post("/repos/{owner}/{name}/dispatches")
        async def dispatch_route(owner: str, name: str, request: Request) -> Response:
            self.dispatch_arrived.set()
            if self.dispatch_hold:
                import anyio

                await anyio.to_thread.run_sync(self.dispatch_release.wait, 60)
                # the caller gave up (or was killed) while held: never count this one
                return JSONResponse({"message": "held request dropped"}, status_code=503)
            if (failed := _record(request)) is not None:
                return failed
            if self.dispatch_fail:
                status, headers = self.dispatch_fail.pop(0)
                return JSONResponse({"message": "fake dispatch failure"}, status_code=status,
                                    headers=headers)
            body = await request.json()
            if len(body.get("event_type", "")) > 100 or len(body.get("client_payload", {})) > 10:
                return JSONResponse({"message": "Validation Failed"}, status_code=422)
            if len(json.dumps(body.get("client_payload", {}), separators=(",", ":"))) > 65_536:
                return JSONResponse({"message": "client_payload too large"}, status_code=422)
            self.dispatches.append((f"{owner}/{name}", body))
            return Response(status_code=204)

        @app.post("/repos/{owner}/{name}/check-runs")
        async def create_check(owner: str, name: str, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            fields = await request.json()
            if "name" not in fields or "head_sha" not in fields:
                return JSONResponse({"message": "Validation Failed"}, status_code=422)
            check_id = next(self._ids)
            self.check_runs[check_id] = {"repo": f"{owner}/{name}", **fields}
            self.check_log.append(("POST", check_id, fields))
            return JSONResponse({"id": check_id, **fields}, status_code=201)

        @app.patch("/repos/{owner}/{name}/check-runs/{check_id}")
        async def update_check(owner: str, name: str, check_id: int,
                               request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            if check_id not in self.check_runs:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            fields = await request.json()
            self.check_runs[check_id].update(fields)
            self.check_log.append(("PATCH", check_id, fields))
            return JSONResponse({"id": check_id, **self.check_runs[check_id]})

        @app.get("/repos/{owner}/{name}/issues/{number}/comments")
        def list_comments(owner: str, name: str, number: int, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            return JSONResponse(self.comments.get((f"{owner}/{name}", number), []))

        @app.post("/repos/{owner}/{name}/issues/{number}/comments")
        async def add_comment(owner: str, name: str, number: int, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            comment = {"id": next(self._ids), "body": (await request.json())["body"]}
            self.comments.setdefault((f"{owner}/{name}", number), []).append(comment)
            return JSONResponse(comment, status_code=201)

        @app.patch("/repos/{owner}/{name}/issues/comments/{comment_id}")
        async def edit_comment(owner: str, name: str, comment_id: int,
                               request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            for comments in self.comments.values():
                for comment in comments:
                    if comment["id"] == comment_id:
                        comment["body"] = (await request.json())["body"]
                        return JSONResponse(comment)
            return JSONResponse({"message": "Not Found"}, status_code=404)

        @app.get("/repos/{owner}/{name}/issues")
        def list_issues(owner: str, name: str, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            q = request.query_params
            state = q.get("state", "open")
            items = [i for i in self.issues.get(f"{owner}/{name}", [])
                     if state == "all" or i["state"] == state]
            if q.get("direction", "desc") == "desc":  # GitHub: sort=created, newest first
                items = items[::-1]
            per_page = min(int(q.get("per_page", 30)), 100)
            page = max(int(q.get("page", 1)), 1)
            last = max(1, -(-len(items) // per_page))
            links = []
            if page < last:
                nxt = request.url.include_query_params(per_page=per_page, page=page + 1)
                end = request.url.include_query_params(per_page=per_page, page=last)
                links = [f'<{nxt}>; rel="next"', f'<{end}>; rel="last"']
            return JSONResponse(items[(page - 1) * per_page: page * per_page],
                                headers={"Link": ", ".join(links)} if links else {})

        @app.get("/repos/{owner}/{name}/issues/{number}")
        def get_issue(owner: str, name: str, number: int, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            for issue in self.issues.get(f"{owner}/{name}", []):
                if issue["number"] == number:
                    return JSONResponse(issue)
            return JSONResponse({"message": "Not Found"}, status_code=404)

        @app.post("/repos/{owner}/{name}/issues")
        async def create_issue(owner: str, name: str, request: Request) -> JSONResponse:
            if (failed := _record(request)) is not None:
                return failed
            fields = await request.json()
            if not isinstance(fields.get("title"), str) or not fields["title"]:
                return JSONResponse({"message": "Validation Failed"}, status_code=422)
            return JSONResponse(self.add_issue(f"{owner}/{name}", fields["title"],
                                               fields.get("body") or "", fields.get("labels", [])),
                                status_code=201)

        self._hook_delivery_routes(app, _record)
        self._crcr_routes(app, _record)
        return app

    def add_issue(self, repo: str, title: str, body: str = "", labels: list[str] | None = None,
                  *, state: str = "open", pull_request: bool = False) -> dict[str, Any]:
        """File an issue (or, ``pull_request=True``, a PR as the issues list shows it)."""
        repo_issues = self.issues.setdefault(repo, [])
        number = len(repo_issues) + 1
        issue: dict[str, Any] = {"id": next(self._ids), "number": number, "title": title,
                                 "body": body, "state": state,
                                 "labels": [{"name": n} for n in labels or []],
                                 "html_url": f"https://github.com/{repo}/issues/{number}"}
        if pull_request:
            issue["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
        repo_issues.append(issue)
        return issue

    def wait_dispatches(self, n: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.dispatches) < n:
            assert time.monotonic() < deadline, f"expected {n} dispatches, got {len(self.dispatches)}"
            time.sleep(0.01)


def pr_files(n: int, prefix: str = "torch/_refs/f") -> list[dict[str, Any]]:
    """``n`` PR-files entries in GitHub's shape (with keys we ignore, like ``sha``)."""
    return [{"sha": f"{i:040x}", "filename": f"{prefix}{i}.py", "status": "modified",
             "additions": 1, "deletions": 0, "changes": 1,
             "patch": "@@ -1 +1 @@\n-x\n+y"} for i in range(n)]


def pull_request_payload(repo: str = "pytorch/pytorch", number: int = 7, *, action: str = "opened",
                         base: str = "b" * 40, head: str = "a" * 40, title: str = "Fix softmax",
                         labels: tuple[str, ...] = ("module: nn",)) -> dict[str, Any]:
    """A ``pull_request`` payload with the parts the relay reads (plus a few it ignores)."""
    return {
        "action": action, "number": number,
        "pull_request": {"number": number, "title": title, "state": "open", "merged": False,
                         "head": {"sha": head, "ref": "feature"},
                         "base": {"sha": base, "ref": "main"},
                         "labels": [{"name": n, "color": "ededed"} for n in labels]},
        "repository": {"full_name": repo, "id": 65600975},
        "sender": {"login": "octocat"},
    }


def push_payload(repo: str = "pytorch/pytorch", *, before: str = "c" * 40, after: str = "d" * 40,
                 commits: list[dict[str, list[str]]] | None = None) -> dict[str, Any]:
    """A ``push`` payload; ``commits`` entries hold ``added``/``removed``/``modified`` lists."""
    return {"ref": "refs/heads/main", "before": before, "after": after, "deleted": False,
            "commits": [{"id": f"{i:040x}", **c} for i, c in enumerate(commits or [])],
            "repository": {"full_name": repo}}


class WebhookSender:
    """Sends deliveries to a relay the way GitHub does, signed with the production signer."""

    def __init__(self, relay_url: str, secret: str) -> None:
        self.url = relay_url.rstrip("/") + "/webhooks/github"
        self.secret = secret
        self.client = httpx.Client(timeout=30.0)

    def send(self, event: str, payload: Any, *, delivery_id: str | None = None,
             body: bytes | None = None, signature: str | None = None,
             headers: dict[str, str] | None = None, sign_it: bool = True) -> httpx.Response:
        """POST one delivery; ``body`` overrides the JSON encoding of ``payload``;
        ``signature`` overrides the computed one; ``sign_it=False`` sends no signature."""
        data = body if body is not None else json.dumps(payload).encode()
        hdrs = delivery_headers(event, data, self.secret, delivery_id=delivery_id)
        if not sign_it:
            del hdrs["X-Hub-Signature-256"]
        elif signature:
            hdrs["X-Hub-Signature-256"] = signature
        hdrs.update(headers or {})
        return self.client.post(self.url, content=data, headers=hdrs)

    def close(self) -> None:
        self.client.close()
