"""``GitHubClient`` against the fake GitHub on loopback: pagination, cap, compare, retries."""

from __future__ import annotations

import pytest
from tenacity import wait_none

from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient
from tests.fakes.github import pr_files


def test_pr_files_cap_at_3000(fake_github) -> None:
    fake, url = fake_github
    fake.add_pull("o/r", 1, pr_files(3050))
    with GitHubClient(url, wait=wait_none()) as gh:
        files = gh.list_pr_files("o/r", 1)
    assert len(files) == 3000
    assert len(fake.seen) == 30 and "authorization" not in fake.seen[0].headers


def test_pr_files_single_page(fake_github) -> None:
    fake, url = fake_github
    fake.add_pull("o/r", 2, pr_files(3))
    with GitHubClient(url) as gh:
        assert [f.filename for f in gh.list_pr_files("o/r", 2)] == [
            "torch/_refs/f0.py", "torch/_refs/f1.py", "torch/_refs/f2.py"]


def test_transient_errors_are_retried(fake_github) -> None:
    fake, url = fake_github
    fake.add_pull("o/r", 3, pr_files(150))
    fake.fail_with = [502, 429]
    with GitHubClient(url, wait=wait_none()) as gh:
        assert len(gh.list_pr_files("o/r", 3)) == 150
    assert len(fake.seen) == 4


def test_gives_up_and_does_not_retry_4xx(fake_github) -> None:
    fake, url = fake_github
    fake.fail_with = [500] * 5
    with GitHubClient(url, attempts=3, wait=wait_none()) as gh, pytest.raises(GitHubAPIError) as err:
        gh.list_pr_files("o/r", 4)
    assert err.value.status_code == 500 and len(fake.seen) == 3
    fake.seen.clear()
    fake.fail_with.clear()
    with GitHubClient(url, wait=wait_none()) as gh, pytest.raises(GitHubAPIError) as err:
        gh.list_pr_files("o/r", 404)
    assert err.value.status_code == 404 and len(fake.seen) == 1


def test_compare(fake_github) -> None:
    fake, url = fake_github
    fake.compares[("o/r", "v1", "v2")] = [{"filename": "a.py", "status": "added", "sha": "x"}]
    with GitHubClient(url, token="t") as gh:
        files = gh.compare("o/r", "v1", "v2")
    assert [(f.filename, f.status) for f in files] == [("a.py", "added")]
    assert fake.seen[0].path == "/repos/o/r/compare/v1...v2"
    assert fake.seen[0].headers["authorization"] == "Bearer t"
