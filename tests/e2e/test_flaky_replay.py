"""``relay replay`` with a flaky simulated fault on head: FLAKY verdicts, not a wall of NEW.

``aten::_softmax:flaky=0.2`` fails a test attempt with probability 0.2 (``spyre_backend.faults``);
with the runner's 2 reruns (``test_specs.run.runner``, PyTorch CI's convention) a softmax test is
FLAKY with probability 0.2·0.8 + 0.2²·0.8 ≈ 0.19 and NEW (failed all three attempts) with
0.2³ = 0.008.  The spec has 18 tests that call ``aten::_softmax`` (4 OpInfos × 3 templates ×
fp16/fp32, less those the templates do not apply to), so about 3.5 of them are FLAKY.

The draws depend only on ``SPYRE_SIM_FAULTS_SEED``, the op, the test and the attempt, so the test
is deterministic; set ``SPYRE_SIM_FAULTS_SEED`` in the environment to try another seed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.test_replay_cli import relay

FAULT = "aten::_softmax:flaky=0.2"
RERUNS = 2  # test_specs.run.runner.run_items' default, which the replay uses
SOFTMAX_OPS = ["softmax", "nn.functional.softmin", "masked.softmax", "masked.softmin"]  # call aten::_softmax
OTHER_OPS = ["log_softmax", "mul", "add"]  # aten::_log_softmax, aten::mul, aten::add: never faulted
DEFAULT_SEED = "1"


@pytest.mark.timeout(300)
def test_flaky_fault_gives_flaky_verdicts_and_at_most_one_new(tmp_path: Path, monkeypatch, op_db_spec,
                                                              softmax_change) -> None:
    monkeypatch.setenv("SPYRE_SIM_FAULTS_SEED", os.environ.get("SPYRE_SIM_FAULTS_SEED", DEFAULT_SEED))
    # this test is about flaky fault verdicts: the device's capability rules (non-contiguous
    # samples, the in-place variant's device clone) would fail the other ops on base and head alike
    monkeypatch.setenv("SPYRE_SIM_CAPABILITY_GROUPS", "none")
    spec = op_db_spec("flk", SOFTMAX_OPS + OTHER_OPS, dtypes=["float16", "float32"],
                      exclude=["softmax.with_dtype", "log_softmax.with_dtype", "nn.functional.softmin.with_dtype"],
                      templates=["TestCommon::test_compare_cpu", "TestCommon::test_noncontiguous_samples",
                                 "TestCommon::test_variant_consistency_eager"])
    proc = relay("replay", str(softmax_change), "--spec", str(spec), "--json",
                 "--head-env", f"current+faults={FAULT}", "--base-env", "current",
                 state=tmp_path / "state", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    run = json.loads(proc.stdout)
    results = {r["id"]: r for r in run["results"]}
    verdicts = {v["id"]: v for v in run["verdicts"]}
    assert set(verdicts) == set(results)
    softmax_tests = {i for i, r in results.items() if r["op"] in SOFTMAX_OPS}
    assert len(softmax_tests) >= 12, sorted(results)  # enough draws for FLAKY to be all but certain

    flaky = {i for i, v in verdicts.items() if v["verdict"] == "FLAKY"}
    new = {i for i, v in verdicts.items() if v["verdict"] == "NEW"}
    assert flaky, "no FLAKY verdict"
    assert len(new) <= 1, new
    for i in flaky:
        assert results[i]["outcome"] == "flaky" and 2 <= results[i]["attempts"] <= 1 + RERUNS
    for i in new:  # NEW only for a test that failed on every attempt
        assert results[i]["outcome"] == "failed" and results[i]["attempts"] == 1 + RERUNS, results[i]
        assert "injected flaky fault: aten::_softmax" in (results[i]["message"] or "")
    # only tests that call aten::_softmax are touched at all; the rest pass like on base
    assert flaky | new <= softmax_tests
    for i, r in results.items():
        if r["op"] in OTHER_OPS:
            assert verdicts[i]["verdict"] == "OK" and r["outcome"] == "passed" and r["attempts"] == 1, r
    assert {v["base"] for v in verdicts.values()} == {"passed"}
    assert run["conclusion"] == ("failure" if new else "success")
    assert proc.returncode == (1 if new else 0)
    assert run["environments"]["head"]["faults"] == FAULT
