"""Push = PR: a ``push`` delivery reads its patches from the fake GitHub's compare API (per commit
past the 300-file cap), over loopback, and then selects exactly what a ``pull_request`` delivery
of the same files selects — through the real pipeline (``run_change``: spec expansion, the
captured op index, stages 1–3) on a small op_db spec; without GitHub's patches the push selects
more (whole files).  ``tests/service/test_push_faults.py``: the push path when the compare API fails."""

from __future__ import annotations

from typing import Any

import pytest

from relay.github.client import GitHubClient
from relay.github.compare import COMPARE_FILES_CAP, changeset_from_compare, merge_commit_files
from relay.settings import Settings
from relay.store.runs import run_for_delivery
from selection.models import ChangedFile
from tests.fakes.github import pull_request_payload, push_payload
from tests.service.conftest import SECRET

REPO, BEFORE, AFTER = "pytorch/pytorch", "c" * 40, "d" * 40
FILES = [
    {"filename": "aten/src/ATen/native/SoftMax.cpp", "status": "modified",
     "patch": "@@ -120,7 +120,7 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n   int64_t dim = 0;\n"
              "-  auto x = a;\n+  auto x = b;\n"},
    {"filename": "torch/_refs/__init__.py", "status": "modified",
     "patch": "@@ -10,3 +10,3 @@ def softmax(a, dim):\n-    return a\n+    return b\n"},
]
#: the universe: ``TestCommon::test_compare_cpu`` at float16 on ``PUSH_OPS`` (``tests/service/conftest.py``)


def op_of(test_id: str) -> str:
    return test_id.rsplit("[", 1)[1].rsplit("-", 1)[0]


def _names(files: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {"modified": [f["filename"] for f in files], "added": [], "removed": []}


def test_push_and_pr_of_the_same_files_select_the_same_tests(tmp_path, start_relay, fake_github,
                                                             push_spec, push_state) -> None:
    fake, gh_url = fake_github
    fake.add_pull(REPO, 7, FILES)
    fake.compares[(REPO, BEFORE, AFTER)] = FILES
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'relay.db'}",
                        github_api_url=gh_url, state_dir=push_state, specs=str(push_spec))
    relay_ = start_relay(settings, report=False)
    assert relay_.sender.send("pull_request", pull_request_payload(number=7), delivery_id="pr-1").status_code == 202
    push = push_payload(before=BEFORE, after=AFTER, commits=[_names(FILES)])
    assert relay_.sender.send("push", push, delivery_id="push-1").status_code == 202
    relay_.drain(timeout=600)
    with relay_.app.state.session_factory() as session:
        pr_run, push_run = (run_for_delivery(session, d) for d in ("pr-1", "push-1"))
    assert pr_run is not None and push_run is not None
    pr_sel = [(t.id, t.mode) for t in pr_run.selection]
    assert pr_sel and [(t.id, t.mode) for t in push_run.selection] == pr_sel
    assert {op_of(t) for t, _ in pr_sel} == {"softmax"}  # the kernel and the ref, not their files
    assert [r.id for r in push_run.results] == [r.id for r in pr_run.results]
    assert any("compare API" in reason for t in push_run.selection for reason in t.reasons)


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
