"""``relay replay`` and ``relay select`` take a change file of any kind, told apart by content —
a ChangeSet, GitHub's PR-files JSON (or compare answer), a unified diff — or, with ``--upstream``,
a commit or range; anything else is refused with a hint naming ``relay changes``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay.changes.inputs import CHANGES_HINT, read_change, revision_hint
from relay.errors import InputError
from tests.e2e.test_replay_cli import relay
from tests.fakes.upstream_git import make_upstream
from tests.selection.test_cli_select import GIT_DIFF, PR_FILES

SHA = "3f1c" * 10
FORMAT_PATCH = f"""\
From {SHA} Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.com>
Date: Tue, 1 Dec 2026 10:00:00 +0000
Subject: [PATCH] softmax: make the input contiguous

---
{GIT_DIFF}"""


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_each_kind_is_detected_by_content(tmp_path: Path) -> None:
    cs = read_change(_write(tmp_path / "a.txt", json.dumps({"base": "a", "head": "b", "files": []})))
    assert (cs.base, cs.head) == ("a", "b")
    pr = read_change(_write(tmp_path / "pr.json", json.dumps(PR_FILES)))
    assert [f.filename for f in pr.files] == ["torch/_refs/__init__.py"] and pr.files[0].patch
    diff = read_change(_write(tmp_path / "softmax.diff", GIT_DIFF))
    assert [f.filename for f in diff.files] == ["aten/src/ATen/native/SoftMax.cpp", "docs/source/nn.rst"]
    assert diff.title == "diff softmax.diff" and diff.head == "unknown"
    patch = read_change(_write(tmp_path / "0001.patch", FORMAT_PATCH))
    assert patch.head == SHA and patch.title == "softmax: make the input contiguous"
    compare = {"base_commit": {"sha": "b" * 40}, "merge_base_commit": {"sha": "c" * 40},
               "commits": [{"sha": "d" * 40}], "files": PR_FILES}
    cmp = read_change(_write(tmp_path / "compare.json", json.dumps(compare)))
    assert (cmp.base, cmp.head, len(cmp.files)) == ("c" * 40, "d" * 40, 1)


@pytest.mark.parametrize(("content", "expected"), [
    ("just some notes\nabout softmax\n", "x.txt:1:1: not a change (a ChangeSet or PR-files JSON, or a unified "
                                         "diff) — starts with 'just some notes'"),
    ("", "x.txt:1:1: not a change (a ChangeSet or PR-files JSON, or a unified diff): the file is empty"),
    ('{"name": "softmax"}', "x.txt: a JSON object without base, head or files is not a ChangeSet"),
])
def test_what_is_no_change_is_refused_with_the_relay_changes_hint(tmp_path: Path, content: str,
                                                                    expected: str) -> None:
    with pytest.raises(InputError) as info:
        read_change(_write(tmp_path / "x.txt", content))
    assert expected in str(info.value) and CHANGES_HINT in str(info.value)
    assert "relay changes --from SRC --to SRC" in CHANGES_HINT


def test_broken_json_keeps_its_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"c.json:2:10: invalid JSON"):
        read_change(_write(tmp_path / "c.json", '{"base": "a",\n "head": '))
    assert "add --upstream PATH" in revision_hint("abc1234..HEAD")
    assert "relay changes" in revision_hint("missing.json") and "no such file" in revision_hint("missing.json")


def test_cli_select_detects_a_diff_and_pr_files_and_hints_otherwise(tmp_path: Path, op_db_spec) -> None:
    spec = op_db_spec("det", ["softmax", "add"], exclude=["softmax.with_dtype"])
    state = tmp_path / "state"
    diff = _write(tmp_path / "softmax.diff", GIT_DIFF)
    out = relay("select", diff, "--spec", str(spec), "--json", state=state, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [t["op"] for t in json.loads(out.stdout)["selected"]] == ["softmax"]
    files = _write(tmp_path / "pr.json", json.dumps(PR_FILES))
    out = relay("select", files, "--spec", str(spec), "--json", state=state, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    for args, expected in ((["select", _write(tmp_path / "notes.txt", "hello\n")], "relay changes --from"),
                           (["replay", _write(tmp_path / "n2.txt", "hello\n")], "relay changes --from"),
                           (["replay", "abc1234..HEAD"], "add --upstream PATH"),
                           (["select", diff, "--diff", diff], "give exactly one change")):
        bad = relay(*args, "--spec", str(spec), state=state, cwd=tmp_path)
        assert bad.returncode == 2 and expected in bad.stderr, bad.stderr[-2000:]
        assert "Traceback" not in bad.stderr


def test_cli_select_reads_a_commit_range_of_a_checkout(tmp_path: Path, op_db_spec) -> None:
    up = make_upstream(tmp_path / "pytorch", 2, bad=1)
    spec = op_db_spec("rng", ["softmax", "add"], exclude=["softmax.with_dtype"])
    out = relay("select", f"{up.root}..{up.commits[-1]}", "--upstream", str(up.path), "--spec", str(spec),
                "--json", state=tmp_path / "state", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [t["op"] for t in json.loads(out.stdout)["selected"]] == ["softmax"]  # SoftMax.cpp changed
    bad = relay("select", "nope..HEAD", "--upstream", str(up.path), "--spec", str(spec),
                state=tmp_path / "state", cwd=tmp_path)
    assert bad.returncode == 2 and "'nope' is not a commit" in bad.stderr and "Traceback" not in bad.stderr
