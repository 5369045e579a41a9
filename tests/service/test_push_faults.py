"""The push path when GitHub's compare API fails (``relay.worker.handlers.on_push`` →
``relay.github.compare.with_patches``), each case through the real handler and the real
selection (``relay.pipeline.run.plan_run``: spec expansion, the captured op index, stages 1–3)
against the fake GitHub over loopback:

* a transient failure (a 5xx, a 403 primary rate limit) is retried and the push then selects
  exactly what the same change as a pull request selects;
* a failure that persists (5xx on every try, a 403 that is no rate limit) never fails the
  delivery: the push is attributed by file names alone, says so in its notes, and selects more
  than the pull request (fail soft: a broken signal means "run more");
* a file list cut at the compare API's 300 files is completed per commit, so a file past the
  cut still selects its tests; when the commits cannot be read, file names alone again.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.domain.delivery import Delivery
from relay.github.compare import COMPARE_FILES_CAP
from relay.github.events import parse_event
from relay.pipeline.local import LocalExecutors
from relay.pipeline.ports import Ports
from relay.pipeline.request import RunRequest
from relay.pipeline.run import plan_run
from relay.settings import Settings
from relay.store import create_schema, make_engine, make_session_factory
from relay.store.run_store import SqlRunStore
from relay.worker.delivery import run_config
from relay.worker.handlers import HANDLERS
from tests.fakes.github import FakeGitHub, pull_request_payload, push_payload
from tests.service.conftest import SECRET

REPO, BEFORE, AFTER = "pytorch/pytorch", "c" * 40, "d" * 40
SOFTMAX_CPP = {"filename": "aten/src/ATen/native/SoftMax.cpp", "status": "modified",
               "patch": "@@ -120,7 +120,7 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n   int64_t dim = 0;\n"
                        "-  auto x = a;\n+  auto x = b;\n"}
DOCS = [{"filename": f"docs/source/f{i:03}.md", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"}
        for i in range(COMPARE_FILES_CAP + 20)]
COMMITS = ["1" * 40, "2" * 40]


class NoSink:
    """Selection stores nothing: a run handed here is a bug of the test."""

    def accept(self, run: object) -> str | None:
        raise AssertionError("plan_run finished a run")


class Pipeline:
    """The relay's webhook path up to selection: a delivery → its ``RunRequest`` → stages 1–3."""

    def __init__(self, settings: Settings, tmp_path: Path) -> None:
        self.settings = settings
        self.config = run_config(settings)
        engine = make_engine(f"sqlite:///{tmp_path / 'runs.db'}")
        create_schema(engine)
        store = SqlRunStore(make_session_factory(engine), main_ref="refs/heads/main")
        self.ports = Ports(executors=LocalExecutors.for_config(self.config), store=store, sink=NoSink())

    def request(self, event: str, payload: dict) -> RunRequest:
        delivery = Delivery(id=f"{event}-1", event=event, received_at=datetime.now(UTC), payload=payload)
        handler = HANDLERS[event]
        request = handler.run(parse_event(event, payload), delivery.id, self.settings)
        assert request is not None
        return request

    def select(self, request: RunRequest) -> list[tuple[str, str]]:
        """``(test id, mode)`` of every test stages 1–3 keep, in selection order."""
        return [(t.id, t.mode) for t in plan_run(request, self.config, self.ports).selection.selected]

    def pr(self) -> list[tuple[str, str]]:
        """The selection of PR #7 (its files from the fake's PR files API)."""
        return self.select(self.request("pull_request", pull_request_payload(number=7, base=BEFORE, head=AFTER)))

    def push(self, files: list[dict]) -> RunRequest:
        names = {"modified": [f["filename"] for f in files], "added": [], "removed": []}
        return self.request("push", push_payload(before=BEFORE, after=AFTER, commits=[names]))


@pytest.fixture
def github(fake_github) -> FakeGitHub:
    return fake_github[0]


@pytest.fixture
def pipeline(fake_github, push_spec, push_state, tmp_path) -> Pipeline:
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'relay.db'}",
                        github_api_url=fake_github[1], state_dir=push_state, specs=str(push_spec))
    return Pipeline(settings, tmp_path)


def _serve(github: FakeGitHub, files: list[dict], *, commits: list[str] | None = None) -> None:
    """The change as a PR (#7) and as the compare range ``BEFORE...AFTER``."""
    github.add_pull(REPO, 7, files)
    github.compares[(REPO, BEFORE, AFTER)] = files
    if commits:
        github.compare_commits[(REPO, BEFORE, AFTER)] = commits


def _compare_calls(github: FakeGitHub) -> int:
    return sum("/compare/" in s.path for s in github.seen)


@pytest.mark.parametrize("fault", [
    pytest.param((502, {}), id="5xx"),
    pytest.param((403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "{soon}"}), id="403-rate-limit"),
])
def test_a_transient_compare_failure_is_retried_and_the_push_selects_what_the_pr_selects(
        github, pipeline, fault) -> None:
    _serve(github, [SOFTMAX_CPP])
    status, headers = fault
    github.compare_fail.append((status, {k: v.format(soon=int(time.time()) + 1) for k, v in headers.items()}))
    push = pipeline.push([SOFTMAX_CPP])
    assert _compare_calls(github) == 2  # the failure, then the answer
    assert [f.patch for f in push.changeset.files] == [SOFTMAX_CPP["patch"]]
    want = pipeline.pr()
    assert want and pipeline.select(push) == want


@pytest.mark.parametrize("faults", [
    pytest.param([(503, {"Retry-After": "0"})] * 4, id="5xx-every-try"),
    pytest.param([(403, {})], id="403-forbidden"),
])
def test_a_compare_api_that_keeps_failing_leaves_the_push_attributed_by_name_selecting_more(
        github, pipeline, faults) -> None:
    _serve(github, [SOFTMAX_CPP])
    github.compare_fail.extend(faults)
    push = pipeline.push([SOFTMAX_CPP])
    assert _compare_calls(github) == len(faults)  # a 403 that is no rate limit is not retried
    assert [f.patch for f in push.changeset.files] == [None]
    assert any(n.startswith("no patches (GitHub:") for n in push.changeset.notes), push.changeset.notes
    want = pipeline.pr()
    got = pipeline.select(push)
    assert set(got) > set(want)  # the whole file: every test the patch selects, and more


def test_a_file_list_cut_at_300_is_completed_per_commit_and_selects_what_the_pr_selects(github, pipeline) -> None:
    files = [*DOCS, SOFTMAX_CPP]  # the kernel file lies past the compare API's cut
    _serve(github, files, commits=COMMITS)
    github.commit_files[(REPO, COMMITS[0])] = DOCS
    github.commit_files[(REPO, COMMITS[1])] = [SOFTMAX_CPP]
    push = pipeline.push(files)
    assert len(push.changeset.files) == len(files)
    assert any("patches read per commit" in n for n in push.changeset.notes), push.changeset.notes
    want = pipeline.pr()
    assert any("softmax" in t for t, _ in want) and pipeline.select(push) == want


def test_a_cut_file_list_whose_commits_cannot_be_listed_falls_back_to_file_names(github, pipeline) -> None:
    files = [*DOCS, SOFTMAX_CPP]
    _serve(github, files)  # no commits listed for the range
    push = pipeline.push(files)
    assert {f.filename for f in push.changeset.files} == {f["filename"] for f in files}
    assert all(f.patch is None for f in push.changeset.files)
    assert any(n.startswith("no patches (GitHub:") for n in push.changeset.notes), push.changeset.notes
    assert set(pipeline.select(push)) > set(pipeline.pr())
