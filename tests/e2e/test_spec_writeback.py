"""Spec write-back as a real patch (issue 18): a replay whose must-pass test fails on an op the
device has no kernel for (or is predicted to, and xfails) writes ``spec-proposal.patch``;
``git apply`` takes it on a copy of the spec (comments and layout kept), the same replay on the
patched spec is green for the proposed test, ``relay specs apply`` does the same, and the run's page shows the patch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from relay.service import create_app
from relay.settings import Settings

pytestmark = pytest.mark.timeout(900)
SPEC = """\
# A must-pass spec: every test listed here has to pass on spyre.
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      reason: only compare_cpu here   # a trailing comment
      issue: test fixture
      tests:
        - names: [TestCommon::test_compare_cpu]
          edits:
            ops:
              include: [{name: add}, {name: nn.functional.mse_loss}]
  global:
    supported_dtypes: [float16]   # fp16 is Spyre's native dtype
"""
CHANGE = {"base": "b" * 40, "head": "c" * 40,
          "files": [{"filename": "aten/src/ATen/native/BinaryOps.cpp"}, {"filename": "aten/src/ATen/native/Loss.cpp"}]}
MSE = "must::TestCommon::test_compare_cpu[nn.functional.mse_loss-float16]"
ADD = "must::TestCommon::test_compare_cpu[add-float16]"


def _relay(args: list[str], cwd: Path, state: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RELAY_STATE_DIR": str(state), "COLUMNS": "200"}
    env.pop("RELAY_DATABASE_URL", None)
    env.pop("RELAY_DASHBOARD_URL", None)
    return subprocess.run([str(Path(sys.executable).parent / "relay"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=800)


def test_a_proposal_applies_with_git_apply_and_the_replay_turns_green(tmp_path: Path, live_server) -> None:
    spec = tmp_path / "must.yaml"
    spec.write_text(SPEC)
    change = tmp_path / "change.json"
    change.write_text(json.dumps(CHANGE))
    state = tmp_path / "state"
    first = _relay(["replay", str(change), "--spec", str(spec), "--json"], tmp_path, state)
    # stage 3 predicts the must-pass MSE test to fail (its index reaches aten::resize_, which has
    # no Spyre kernel) and runs it as xfail: the run is green, and the spec is still told
    assert first.returncode == 0, first.stderr[-3000:]
    run = json.loads(first.stdout)
    results = {r["id"]: r for r in run["results"]}
    assert (results[MSE]["mode"], results[MSE]["outcome"]) == ("xfail", "xfailed")
    assert "aten::resize_" in results[MSE]["message"]
    patch_file = state / "runs" / run["id"] / "spec-proposal.patch"
    assert patch_file.read_text() == run["spec_proposal"]
    assert f"relay specs apply {patch_file}" in first.stderr.replace("\n", "")
    assert not (state / "runs" / run["id"] / "spec-proposals.yaml").exists()

    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(spec, copy / "must.yaml")
    check = subprocess.run(["git", "apply", "--check", "-v", str(patch_file)], cwd=copy, capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr
    assert subprocess.run(["git", "apply", str(patch_file)], cwd=copy).returncode == 0
    patched = (copy / "must.yaml").read_text()
    old_lines, new_lines = SPEC.splitlines(), patched.splitlines()
    assert [ln for ln in new_lines if ln in old_lines] == old_lines  # only additions: layout kept
    added = [ln for ln in new_lines if ln not in old_lines]
    assert any(ln.lstrip().startswith("# proposed by spyre-relay: aten::resize_ has no Spyre kernel")
               for ln in added), added
    assert patch_file.read_text().count("\n@@ ") == 1  # one proposal, one hunk

    again = _relay(["replay", str(change), "--spec", str(copy / "must.yaml"), "--json"], copy, state)
    assert again.returncode == 0, again.stderr[-3000:]
    rerun = {r["id"]: r for r in json.loads(again.stdout)["results"]}
    assert (rerun[MSE]["mode"], rerun[MSE]["outcome"]) == ("xfail", "xfailed")
    assert rerun[ADD]["outcome"] == "passed" and json.loads(again.stdout)["spec_proposal"] is None

    # relay specs apply: from a run id (the stored proposal) into a directory given by --root
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(spec, other / "must.yaml")
    applied = _relay(["specs", "apply", run["id"], "--root", str(other)], tmp_path, state)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (other / "must.yaml").read_text() == patched
    strict = _relay(["specs", "check", "--strict", str(other / "must.yaml")], tmp_path, state)
    assert strict.returncode == 0, strict.stdout + strict.stderr  # reason and issue are there
    twice = _relay(["specs", "apply", str(patch_file), "--root", str(other)], tmp_path, state)
    assert twice.returncode == 2 and "git apply --check" in twice.stderr and "Traceback" not in twice.stderr

    app = create_app(Settings(webhook_secret="page-secret-123456", state_dir=state,
                              database_url=f"sqlite:///{state / 'relay.db'}"), recover=False)
    url = live_server(app).url
    page = httpx.get(f"{url}/runs/{run['id']}")
    assert page.status_code == 200 and 'id="spec-proposal"' in page.text
    assert "+    supported_ops:" in page.text and f"relay specs apply {run['id']}" in page.text
    raw = httpx.get(f"{url}/runs/{run['id']}/spec-proposal.patch")
    assert raw.status_code == 200 and raw.text == run["spec_proposal"]
    assert httpx.get(f"{url}/runs/nope/spec-proposal.patch").status_code == 404
