"""``relay audit``: every test runs on base and head; outcome changes selection missed are listed
with the stage and reason that dropped them; recall and selected share are printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_replay_cli import relay

FAULT = "aten::_softmax:offset=0.05"
SOFTMAX = "aud::TestCommon::test_compare_cpu[softmax-float16]"
#: touches only aten::mul (a per-op header): the faulted aten::_softmax is not part of the change
MUL_ONLY = {"base": "v-base", "head": "v-mul", "title": "mul header only",
            "files": [{"filename": "torch/include/ATen/ops/mul_native.h", "status": "modified"}]}


@pytest.fixture
def spec(op_db_spec) -> Path:
    return op_db_spec("aud", ["softmax", "log_softmax", "add", "mul"],
                      exclude=["softmax.with_dtype", "log_softmax.with_dtype"])


@pytest.mark.timeout(900)
def test_selection_catches_the_fault_but_one_change_is_inconclusive(tmp_path: Path, spec: Path,
                                                                     softmax_change: Path) -> None:
    out = relay("audit", str(softmax_change), "--spec", str(spec), "--json",
                "--head-env", f"current+faults={FAULT}", "--base-env", "current",
                state=tmp_path / "state", cwd=tmp_path)
    assert out.returncode == 3, out.stderr[-3000:]  # 1 outcome change < 20: inconclusive (issue 28)
    report = json.loads(out.stdout)
    s = report["summary"]
    assert s["audited"] == 4 and s["universe"] == 4
    # exactly the test running aten::_softmax changed outcome, and selection picked it
    assert [(c["id"], c["base"], c["head"], c["selected"]) for c in report["changes"]] == \
        [(SOFTMAX, "passed", "failed", True)]
    assert s["verdict"] == "inconclusive" and s["recall"] is None and s["missed"] == 0
    # softmax, log_softmax (refs symbols) and mul (header) selected; add not
    assert s["selected"] == 3 and s["share"] == 0.75
    assert "inconclusive: 1 outcome changes seen, fewer than 20" in out.stderr
    assert "recall of real outcome changes" not in out.stderr
    assert "selected share 75.00% (3/4" in out.stderr
    saved = sorted((tmp_path / "state" / "audits").glob("*/audit.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["summary"] == s
    # an audit is a measurement, not a run: nothing stored as history
    assert not (tmp_path / "state" / "relay.db").exists()


@pytest.mark.timeout(900)
def test_a_change_that_does_not_touch_the_faulted_op_lists_the_miss_with_its_reason(
        tmp_path: Path, spec: Path) -> None:
    change = tmp_path / "mul.json"
    change.write_text(json.dumps(MUL_ONLY))
    out = relay("audit", str(change), "--spec", str(spec), "--json",
                "--head-env", f"current+faults={FAULT}", "--base-env", "current",
                state=tmp_path / "state", cwd=tmp_path)
    assert out.returncode == 1, out.stderr[-3000:]  # an outcome change was missed
    report = json.loads(out.stdout)
    assert report["summary"]["recall"] == 0.0 and report["summary"]["missed"] == 1
    assert report["summary"]["selected"] == 1  # only the mul test
    (miss,) = report["changes"]
    assert miss["id"] == SOFTMAX and not miss["selected"] and miss["stage"] == "memory"
    assert "aten::_softmax" in miss["reason"] and "aten::mul" in miss["reason"]
    assert "missed outcome changes (1)" in out.stderr and SOFTMAX in out.stderr
    assert "recall of real outcome changes 0.0% (0/1)" in out.stderr


def test_bad_input_is_a_one_line_error(tmp_path: Path, spec: Path, softmax_change: Path) -> None:
    bad_env = relay("audit", str(softmax_change), "--spec", str(spec), "--head-env", "current+faults=",
                    "--base-env", "current", state=tmp_path / "state", cwd=tmp_path)
    assert bad_env.returncode == 2 and "empty +faults= value" in bad_env.stderr
    assert "Traceback" not in bad_env.stderr
    missing = relay("audit", str(tmp_path / "nope.json"), "--spec", str(spec), "--head-env", "current",
                    "--base-env", "current", state=tmp_path / "state", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_a_test_not_collected_on_one_side_is_no_outcome_change(tmp_path: Path, spec: Path,
                                                               softmax_change: Path) -> None:
    """In process, with executors that report one id as the runner does when the head's torch
    cannot expand its spec (an OpInfo that torch no longer has)."""
    from relay.changes.inputs import read_change
    from relay.pipeline.audit import AuditRequest, audit_change
    from relay.pipeline.request import RunConfig
    from test_specs.values.results import TestResult

    gone = "aud::TestCommon::test_compare_cpu[add-float16]"

    def executors(workdir, *, environment=None, on_result=None):
        head = environment is not None and "SPYRE_SIM_FAULTS" in environment.env

        def run(ids):
            out = []
            for i in ids:
                if head and i == gone:
                    out.append(TestResult(id=i, upstream="u", outcome="failed",
                                          message="not collected: no spec file produces this id"))
                else:
                    out.append(TestResult(id=i, upstream="u", outcome="failed" if head and i == SOFTMAX else "passed"))
            return out
        return run

    config = RunConfig(spec_paths=(spec,), state_dir=tmp_path / "state")
    report = audit_change(AuditRequest(changeset=read_change(str(softmax_change)), base_env="current",
                                       head_env=f"current+faults={FAULT}"), config, executors)
    assert [c.id for c in report.changes] == [SOFTMAX] and report.recall == 1.0
    assert report.uncollected == {"head": [gone]} and report.uncollected_selected == 0
    assert report.summary()["uncollected"] == {"head": 1}
    assert any("1 tests not collected on head" in n for n in report.notes)
