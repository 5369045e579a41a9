"""A small synchronous GitHub REST client (httpx) for the file lists of changes.

Rule sources (GitHub REST docs):

* ``GET /repos/{owner}/{repo}/pulls/{number}/files`` — paginated, ``per_page`` ≤ 100, at most
  3,000 files in total; the next page is announced by ``Link: <url>; rel="next"``.
* ``GET /repos/{owner}/{repo}/compare/{base}...{head}`` — without paging parameters the
  response lists up to 300 changed files in ``files``.
* Headers: ``Accept: application/vnd.github+json``, ``X-GitHub-Api-Version: 2022-11-28``,
  ``Authorization: Bearer <token>`` when a token is configured.

Transient answers (5xx, 429) and transport errors are retried with tenacity; ``wait`` is
injectable so tests run without sleeping.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)
from tenacity.wait import wait_base

from relay.errors import GitHubAPIError
from selection.models import ChangedFile

__all__ = ["GitHubClient", "PR_FILES_CAP", "PER_PAGE"]

log = logging.getLogger(__name__)

PR_FILES_CAP = 3000  # GitHub lists at most 3,000 files of a pull request
PER_PAGE = 100  # the maximum page size of the PR files endpoint
API_VERSION = "2022-11-28"


class _Transient(Exception):
    """A retryable answer (5xx/429); carries the response for the final error."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"{response.status_code} for {response.request.url}")
        self.response = response


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, (_Transient, httpx.TransportError))


class GitHubClient:
    """GitHub REST client bound to ``base_url`` (e.g. ``https://api.github.com``).

    ``attempts`` counts tries per request (1 + retries); ``wait`` is a tenacity wait strategy
    (default exponential 0.5 s → 4 s).  ``transport`` lets tests plug in ``httpx.MockTransport``.
    Use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        base_url: str = "https://api.github.com",
        token: str | None = None,
        *,
        attempts: int = 4,
        wait: wait_base | None = None,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
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
        self._attempts = attempts
        self._wait = wait if wait is not None else wait_exponential(multiplier=0.5, max=4)

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> "GitHubClient":
        """A client for ``settings.github_api_url`` with ``settings.github_token`` if set."""
        token = settings.github_token.get_secret_value() if settings.github_token else None
        return cls(settings.github_api_url, token, **kwargs)

    def __enter__(self) -> "GitHubClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def get(self, url: str, params: dict[str, Any] | None = None) -> httpx.Response:
        """GET ``url`` (relative to the base or absolute) with retries; raises ``GitHubAPIError``."""
        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    resp = self._http.get(url, params=params)
                    if resp.status_code >= 500 or resp.status_code == 429:
                        raise _Transient(resp)
        except _Transient as exc:
            raise GitHubAPIError(exc.response.status_code, str(exc.response.request.url),
                                 exc.response.text) from None
        if resp.status_code >= 400:
            raise GitHubAPIError(resp.status_code, str(resp.request.url), resp.text)
        return resp

    def _pages(self, url: str, params: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
        resp = self.get(url, params=params)
        yield resp.json()
        while (nxt := resp.links.get("next", {}).get("url")) is not None:
            resp = self.get(nxt)
            yield resp.json()

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
