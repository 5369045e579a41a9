"""A small synchronous GitHub REST client (httpx) for the file lists of changes.

Rule sources (GitHub REST docs):

* ``GET /repos/{owner}/{repo}/pulls/{number}/files`` — paginated, ``per_page`` ≤ 100, at most
  3,000 files in total; the next page is announced by ``Link: <url>; rel="next"``.
* ``GET /repos/{owner}/{repo}/compare/{base}...{head}`` — without paging parameters the
  response lists up to 300 changed files in ``files``.
* ``GET /repos/{owner}/{repo}/issues`` (``state``, ``sort``, ``direction``, ``per_page`` ≤ 100;
  pull requests are listed too, with a ``pull_request`` key) and ``POST`` the same path
  (``title``, ``body``, ``labels``; 201 with ``number`` and ``html_url``).
* Headers: ``Accept: application/vnd.github+json``, ``X-GitHub-Api-Version: 2022-11-28``,
  ``Authorization: Bearer <token>`` when a token is configured.

Transient answers (5xx, 429, and 403 with ``X-RateLimit-Remaining: 0``) and transport
errors are retried with tenacity.  The wait honours GitHub's rate-limit headers (GitHub docs,
"Rate limits for the REST API": wait ``Retry-After`` seconds when present, else until the
``X-RateLimit-Reset`` epoch second when the remaining quota is 0), capped at ``max_wait_s``;
otherwise the ``wait`` strategy (exponential) applies.  ``wait`` is injectable so tests run
without sleeping.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import httpx
from tenacity import RetryCallState, Retrying
from tenacity.wait import wait_base

from relay.errors import GitHubAPIError
from relay.retrying import HTTP, Backoff
from selection.models import ChangedFile

__all__ = ["GitHubClient", "PR_FILES_CAP", "PER_PAGE", "rate_limit_delay", "wait_rate_limited"]

log = logging.getLogger(__name__)

PR_FILES_CAP = 3000  # GitHub lists at most 3,000 files of a pull request
PER_PAGE = 100  # the maximum page size of the PR files endpoint
API_VERSION = "2022-11-28"
T = TypeVar("T")


class _Transient(Exception):
    """A retryable answer (5xx/429); carries the response for the final error."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"{response.status_code} for {response.request.url}")
        self.response = response


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, (_Transient, httpx.TransportError))


def _is_transient(resp: httpx.Response) -> bool:
    if resp.status_code >= 500 or resp.status_code == 429:
        return True
    return resp.status_code == 403 and (resp.headers.get("x-ratelimit-remaining") == "0"
                                        or "retry-after" in resp.headers)


def rate_limit_delay(resp: httpx.Response, now: float | None = None) -> float | None:
    """Seconds GitHub asks us to wait: ``Retry-After`` (seconds), else ``X-RateLimit-Reset``
    minus now when ``X-RateLimit-Remaining`` is 0; ``None`` when the answer says nothing."""
    retry_after = resp.headers.get("retry-after")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            return None
    if resp.headers.get("x-ratelimit-remaining") == "0":
        try:
            reset = float(resp.headers["x-ratelimit-reset"])
        except (KeyError, ValueError):
            return None
        return max(0.0, reset - (time.time() if now is None else now))
    return None


class wait_rate_limited(wait_base):
    """Tenacity wait: the server's rate-limit delay (capped at ``max_wait_s``) when the last
    answer carried one, else ``fallback``."""

    def __init__(self, fallback: wait_base, max_wait_s: float = 60.0) -> None:
        self.fallback = fallback
        self.max_wait_s = max_wait_s

    def __call__(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _Transient):
            delay = rate_limit_delay(exc.response)
            if delay is not None:
                return min(delay, self.max_wait_s)
        return self.fallback(retry_state)


class GitHubClient:
    """GitHub REST client bound to ``base_url`` (e.g. ``https://api.github.com``).

    Retries follow ``policy`` (default ``relay.retrying.HTTP``: 4 tries, 1, 2, 4 s);
    ``attempts`` overrides its number of tries, ``wait`` its waits (tests).  ``transport`` lets
    tests plug in ``httpx.MockTransport``.
    Use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        base_url: str = "https://api.github.com",
        token: str | None = None,
        *,
        policy: Backoff = HTTP,
        attempts: int | None = None,
        wait: wait_base | None = None,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        max_wait_s: float = 60.0,
    ) -> None:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "spyre-relay",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )
        self._policy = policy if attempts is None else replace(policy, attempts=attempts)
        self._wait = wait_rate_limited(wait if wait is not None else policy.wait(), max_wait_s)

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> GitHubClient:
        """A client for ``settings.github_api_url`` with ``settings.github_token`` if set."""
        token = settings.github_token.get_secret_value() if settings.github_token else None
        kwargs.setdefault("max_wait_s", getattr(settings, "dispatch_max_wait_s", 60.0))
        return cls(settings.github_api_url, token, **kwargs)

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _retrying(self) -> Retrying:
        return self._policy.retrying(_retryable, wait=self._wait)

    def _once(self, method: str, url: str, *, params: dict[str, Any] | None = None,
              json: Any = None) -> httpx.Response:
        """One try; raises ``_Transient`` for a retryable answer."""
        resp = self._http.request(method, url, params=params, json=json)
        if _is_transient(resp):
            raise _Transient(resp)
        return resp

    def _retried(self, url: str, call: Callable[[], T]) -> T:
        """``call()`` under the retry policy; the final transient answer or transport error
        becomes ``GitHubAPIError`` (status 0 for a transport error)."""
        try:
            for attempt in self._retrying():
                with attempt:
                    result = call()
        except _Transient as exc:
            raise GitHubAPIError(exc.response.status_code, str(exc.response.request.url),
                                 exc.response.text) from None
        except httpx.TransportError as exc:
            raise GitHubAPIError(0, str(url), f"{type(exc).__name__}: {exc}") from None
        return result

    def request(self, method: str, url: str, *, params: dict[str, Any] | None = None,
                json: Any = None) -> httpx.Response:
        """``method`` ``url`` (relative to the base or absolute) with retries on transient
        answers; returns the 2xx/3xx response, raises ``GitHubAPIError`` otherwise."""
        resp = self._retried(url, lambda: self._once(method, url, params=params, json=json))
        if resp.status_code >= 400:
            raise GitHubAPIError(resp.status_code, str(resp.request.url), resp.text)
        return resp

    def get(self, url: str, params: dict[str, Any] | None = None) -> httpx.Response:
        """GET ``url`` with retries; raises ``GitHubAPIError``."""
        return self.request("GET", url, params=params)

    def dispatch(self, repo: str, event_type: str, client_payload: dict[str, Any]) -> None:
        """``POST /repos/{repo}/dispatches`` (``repository_dispatch``; GitHub answers 204).

        GitHub limits: ``event_type`` ≤ 100 characters, ``client_payload`` ≤ 10 top-level
        properties; the caller enforces the size cap (``relay.crcr.payloads``)."""
        self.request("POST", f"/repos/{repo}/dispatches",
                     json={"event_type": event_type, "client_payload": client_payload})

    def _pages(self, url: str, params: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
        resp = self.get(url, params=params)
        yield resp.json()
        while (nxt := resp.links.get("next", {}).get("url")) is not None:
            resp = self.get(nxt)
            yield resp.json()

    def pages(self, url: str, params: dict[str, Any] | None = None
              ) -> Iterator[list[dict[str, Any]]]:
        """Each page (a JSON list) of a paginated list, lazily: stop iterating to stop fetching.

        Follows ``Link: <...>; rel="next"`` (GitHub REST docs, "Using pagination in the REST
        API"), so it serves page-numbered lists and cursor-paginated ones alike (the ``cursor``
        rides in the next URL, e.g. the hook-deliveries list); every request is retried like
        ``request``; raises ``GitHubAPIError``."""
        return self._pages(url, dict(params or {}))

    def list_pr_files(self, repo: str, number: int) -> list[ChangedFile]:
        """Every changed file of pull request ``number`` in ``repo`` (``owner/name``).

        Follows ``Link: rel="next"`` with ``per_page=100``; stops at GitHub's 3,000-file cap
        (a warning is logged when the cap is reached, since later files are invisible).
        """
        files: list[ChangedFile] = []
        for page in self._pages(f"/repos/{repo}/pulls/{number}/files", {"per_page": PER_PAGE}):
            files.extend(ChangedFile.model_validate(item) for item in page)
            if len(files) >= PR_FILES_CAP:
                log.warning("%s#%s lists %d+ files; GitHub caps the list at %d",
                            repo, number, len(files), PR_FILES_CAP)
                return files[:PR_FILES_CAP]
        return files

    def compare(self, repo: str, base: str, head: str) -> list[ChangedFile]:
        """The changed files of ``base...head`` in ``repo`` from the compare API (≤ 300 files)."""
        resp = self.get(f"/repos/{repo}/compare/{base}...{head}")
        return [ChangedFile.model_validate(item) for item in resp.json().get("files", [])]

    def compare_commits(self, repo: str, base: str, head: str, *, limit: int = 2048) -> list[str] | None:
        """Every commit sha of ``base...head`` (oldest first) from the compare API, paged with
        ``per_page``/``page`` (100 a page, at most ``limit``); ``None`` when GitHub cannot list
        them all (unknown commits, an answer without ``commits``, more than ``limit``)."""
        shas: list[str] = []
        try:
            for page in range(1, limit // PER_PAGE + 2):
                body = self.get(f"/repos/{repo}/compare/{base}...{head}",
                                {"per_page": PER_PAGE, "page": page}).json()
                batch = [c["sha"] for c in body.get("commits", []) if c.get("sha")]
                shas.extend(batch)
                total = int(body.get("total_commits", len(shas)))
                if len(shas) >= total or len(batch) < PER_PAGE:
                    break
        except (GitHubAPIError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("compare %s...%s in %s: %s", base, head, repo, exc)
            return None
        return shas if shas and len(shas) >= total else None

    def find_open_issue(self, repo: str, title: str) -> dict[str, Any] | None:
        """The oldest open issue of ``repo`` whose title is exactly ``title``, or ``None``.

        ``GET /repos/{repo}/issues?state=open&sort=created&direction=asc&per_page=100``, every
        page through ``Link: rel="next"``; GitHub lists pull requests as issues too (they carry
        a ``pull_request`` key) and those are skipped.  The list API is read rather than the
        search API because search is eventually consistent (a just-filed issue may be missing).
        """
        params = {"state": "open", "sort": "created", "direction": "asc", "per_page": PER_PAGE}
        for page in self._pages(f"/repos/{repo}/issues", params):
            for item in page:
                if "pull_request" not in item and item.get("title") == title:
                    return item
        return None

    def get_issue(self, repo: str, number: int) -> dict[str, Any]:
        """``GET /repos/{repo}/issues/{number}``: the issue (``state`` ``open``|``closed``);
        raises ``GitHubAPIError`` (404 for an unknown or transferred issue)."""
        return self.get(f"/repos/{repo}/issues/{number}").json()

    def create_issue(self, repo: str, title: str, body: str = "",
                     labels: Sequence[str] = ()) -> dict[str, Any]:
        """``POST /repos/{repo}/issues`` with ``title``, ``body`` (and ``labels`` when given);
        GitHub answers 201 with the issue (``number``, ``html_url``, ``state``).  Retried like
        every call — use ``ensure_issue`` when a duplicate must never be filed."""
        return self.request("POST", f"/repos/{repo}/issues",
                            json=_issue_fields(title, body, labels)).json()

    def ensure_issue(self, repo: str, title: str, body: str = "",
                     labels: Sequence[str] = ()) -> tuple[dict[str, Any], bool]:
        """The open issue titled exactly ``title`` in ``repo``, filed when there is none:
        ``(issue, created)``.  A create answered with a transient error (5xx, 429) may still
        have filed the issue, so every retry looks it up by title again before posting;
        raises ``GitHubAPIError`` when GitHub refuses (e.g. 404, 410 issues disabled, 422)."""
        url = f"/repos/{repo}/issues"

        def attempt() -> tuple[dict[str, Any], bool]:
            found = self.find_open_issue(repo, title)
            if found is not None:
                return found, False
            resp = self._once("POST", url, json=_issue_fields(title, body, labels))
            if resp.status_code >= 400:
                raise GitHubAPIError(resp.status_code, str(resp.request.url), resp.text)
            return resp.json(), True

        return self._retried(url, attempt)


def _issue_fields(title: str, body: str, labels: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {"title": title, "body": body}
    if labels:
        fields["labels"] = list(labels)
    return fields
