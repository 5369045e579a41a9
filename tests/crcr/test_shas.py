"""Upstream commit checks for nightly callbacks (CRCR ``tests/test_sha_validator.py``): known
commits cached an hour, unknown ones five minutes, GitHub trouble accepted and not cached."""

from __future__ import annotations

import httpx
import pytest

from relay.crcr.shas import UpstreamCommits
from relay.github.client import GitHubClient


@pytest.fixture
def github():
    state = {"answers": {}, "calls": []}

    def handler(request: httpx.Request) -> httpx.Response:
        sha = request.url.path.rsplit("/", 1)[1]
        state["calls"].append(sha)
        return httpx.Response(state["answers"].get(sha, 404), json={})

    def make() -> GitHubClient:
        return GitHubClient("https://api.invalid", attempts=1, transport=httpx.MockTransport(handler))

    return state, make


def test_known_unknown_and_cached(github, monkeypatch) -> None:
    state, make = github
    state["answers"] = {"a" * 40: 200}
    commits = UpstreamCommits("pytorch/pytorch", make, positive_ttl_s=3600, negative_ttl_s=300)
    assert commits.known("a" * 40) and commits.known("A" * 40)
    assert not commits.known("b" * 40) and not commits.known("b" * 40)
    assert state["calls"] == ["a" * 40, "b" * 40]  # one lookup each
    state["answers"]["b" * 40] = 200
    assert not commits.known("b" * 40)  # the negative answer still cached
    assert not commits.known("xyz") and state["calls"] == ["a" * 40, "b" * 40]  # never asked


def test_expiry_negative_sooner(github) -> None:
    state, make = github
    clock = [0.0]
    commits = UpstreamCommits("p/p", make, timer=lambda: clock[0])
    state["answers"] = {"a" * 40: 200}
    assert commits.known("a" * 40) and not commits.known("b" * 40)
    clock[0] = 301
    state["answers"]["b" * 40] = 200
    assert commits.known("b" * 40) and commits.known("a" * 40)
    assert state["calls"] == ["a" * 40, "b" * 40, "b" * 40]
    clock[0] = 3700
    assert commits.known("a" * 40) and state["calls"][-1] == "a" * 40


@pytest.mark.parametrize("status", [500, 403, 429])
def test_github_trouble_fails_open_uncached(github, status) -> None:
    state, make = github
    state["answers"] = {"c" * 40: status}
    commits = UpstreamCommits("p/p", make)
    assert commits.known("c" * 40) and commits.known("c" * 40)
    assert len(state["calls"]) == 2
