"""Push = PR: a ``push`` delivery reads its patches from the fake GitHub's compare API (per commit
past the 300-file cap), over loopback, and then selects exactly what a ``pull_request`` delivery
of the same files selects; without GitHub's patches the push selects more (whole files)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import relay.worker.delivery
from relay.github.client import GitHubClient
from relay.github.compare import COMPARE_FILES_CAP, changeset_from_compare, merge_commit_files
from relay.settings import Settings
from selection.index.op_index import TestOpIndex
from selection.models import ChangedFile, ChangeSet
from selection.pipeline import Selector
from test_specs.values.items import SpecItem, make_item_id
from tests.fakes.github import pull_request_payload, push_payload
from tests.fakes.runs import run_from_changeset
from tests.service.conftest import SECRET

REPO, BEFORE, AFTER = "pytorch/pytorch", "c" * 40, "d" * 40
FILES = [
    {"filename": "aten/src/ATen/native/SoftMax.cpp", "status": "modified",
     "patch": "@@ -120,7 +120,7 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n   int64_t dim = 0;\n"
              "-  auto x = a;\n+  auto x = b;\n"},
    {"filename": "torch/_refs/__init__.py", "status": "modified",
     "patch": "@@ -10,3 +10,3 @@ def softmax(a, dim):\n-    return a\n+    return b\n"},
]
OPS = {"softmax": ["aten::_softmax"], "log_softmax": ["aten::_log_softmax"], "add": ["aten::add"],
       "mul": ["aten::mul"], "sum": ["aten::sum"], "mm": ["aten::mm"]}


def _item(op: str, dtype: str) -> SpecItem:
    return SpecItem(id=make_item_id("core", "compare_cpu", op, dtype), suite="core", template="compare_cpu",
                    upstream="test/test_ops.py::TestCommon::test_compare_cpu", op=op, dtype=dtype)


@pytest.fixture(scope="module")
def selector(tmp_path_factory) -> Selector:
    items = [_item(op, dt) for op in OPS for dt in ("float16", "float32")]
    index = TestOpIndex({i.id: OPS[i.op] for i in items})
    return Selector(items, index=index, generators={}, cache_dir=tmp_path_factory.mktemp("idx"))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[ChangeSet]:
    seen: list[ChangeSet] = []

    def fake_run_change(request, config, ports):
        seen.append(request.changeset)
        return SimpleNamespace(run=run_from_changeset(request.changeset, trigger=request.trigger,
                                                      delivery_id=request.delivery_id))

    monkeypatch.setattr(relay.worker.delivery, "run_change", fake_run_change)
    return seen


def _selected(selector: Selector, cs: ChangeSet) -> list[str]:
    return [t.id for t in selector.select(cs, mode="pr").to_run]


def _deliver(tmp_path, start_relay, gh_url: str, event: str, payload: dict[str, Any], did: str) -> None:
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / (did + '.db')}",
                        github_api_url=gh_url)
    relay_ = start_relay(settings, report=False)
    assert relay_.sender.send(event, payload, delivery_id=did).status_code == 202
    relay_.drain()


def test_push_and_pr_of_the_same_files_select_the_same_tests(tmp_path, start_relay, fake_github,
                                                             calls, selector) -> None:
    fake, gh_url = fake_github
    fake.add_pull(REPO, 7, FILES)
    fake.compares[(REPO, BEFORE, AFTER)] = FILES
    _deliver(tmp_path, start_relay, gh_url, "pull_request", pull_request_payload(number=7), "pr-1")
    names = {"modified": [f["filename"] for f in FILES], "added": [], "removed": []}
    _deliver(tmp_path, start_relay, gh_url, "push", push_payload(before=BEFORE, after=AFTER,
                                                                 commits=[names]), "push-1")
    pr, push = calls
    assert [f.patch for f in push.files] == [f["patch"] for f in FILES]
    assert "compare API" in push.notes[0]
    want = _selected(selector, pr)
    assert want and _selected(selector, push) == want
    assert {t.split("[")[1].split("-")[0] for t in want} == {"softmax"}  # the kernel, not the file
    # the same push without GitHub's patches: file names only, selection keeps more
    bare = push.model_copy(update={"files": [f.model_copy(update={"patch": None}) for f in push.files]})
    assert set(_selected(selector, bare)) > set(want)


def test_push_past_the_compare_cap_reads_patches_per_commit(fake_github) -> None:
    fake, gh_url = fake_github
    many = [{"filename": f"docs/f{i}.md", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"}
            for i in range(COMPARE_FILES_CAP + 20)]
    fake.compares[(REPO, BEFORE, AFTER)] = many  # the fake, like GitHub, lists only the first 300
    fake.compare_commits[(REPO, BEFORE, AFTER)] = ["1" * 40, "2" * 40]
    fake.commit_files[(REPO, "1" * 40)] = many[:310] + [FILES[0]]
    fake.commit_files[(REPO, "2" * 40)] = many[310:] + [
        {**FILES[0], "patch": "@@ -300,2 +300,2 @@ Tensor softmax_lastdim(\n-a\n+b"}]
    with GitHubClient(gh_url, attempts=1) as github:
        cs = changeset_from_compare(github, REPO, BEFORE, AFTER)
    assert len(cs.files) == COMPARE_FILES_CAP + 21
    softmax = next(f for f in cs.files if f.filename.endswith("SoftMax.cpp"))
    assert "TORCH_IMPL_FUNC(softmax_cpu_out)" in softmax.patch and "softmax_lastdim(" in softmax.patch
    assert "at most 300 files; patches read per commit" in cs.notes[0] and "2 commits" in cs.notes[0]
    pages = [s.query.get("page", "1") for s in fake.seen if s.path.endswith("1" * 40)]
    assert pages == ["1", "2"]  # 311 files: GitHub pages a commit's files by 300


def test_merge_commit_files_composes_status_like_a_push() -> None:
    one = [ChangedFile(filename="a.py", status="added", patch="@@ -0,0 +1 @@\n+x"),
           ChangedFile(filename="b.py", status="modified", patch="p1"),
           ChangedFile(filename="c.py", status="added")]
    two = [ChangedFile(filename="a.py", status="modified", patch="p2"),
           ChangedFile(filename="b.py", status="removed"),
           ChangedFile(filename="c.py", status="removed")]
    merged = merge_commit_files([one, two])
    assert [(f.filename, f.status, f.patch) for f in merged] == [
        ("a.py", "added", "@@ -0,0 +1 @@\n+x\np2"), ("b.py", "removed", "p1")]


def test_a_sha_range_without_a_checkout_is_read_from_github(fake_github, monkeypatch, tmp_path) -> None:
    """``relay select|replay A..B`` without ``--upstream``: the compare API, over loopback."""
    import typer

    from relay.cli.common import read_change_or_fail

    fake, gh_url = fake_github
    fake.compares[(REPO, BEFORE, AFTER)] = FILES
    monkeypatch.setenv("RELAY_GITHUB_API_URL", gh_url)
    monkeypatch.setenv("RELAY_STATE_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    cs = read_change_or_fail(f"{BEFORE}..{AFTER}")
    assert (cs.base, cs.head, [f.patch for f in cs.files]) == (BEFORE, AFTER, [f["patch"] for f in FILES])
    with pytest.raises(typer.Exit):  # an unknown range: a one-line message, no traceback
        read_change_or_fail(f"{AFTER}..{BEFORE}")
