"""``relay replay --head-env/--base-env`` with simulated regressions: verdicts against a baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay.settings import get_settings
from relay.store import make_engine, make_session_factory
from relay.store.regression import load_environments, load_verdicts
from tests.e2e.test_replay_cli import relay

FAULT = "aten::_softmax:offset=0.05"


@pytest.mark.timeout(900)
def test_head_only_fault_is_new_and_fault_on_both_is_broken_trunk(tmp_path: Path, op_db_spec, softmax_change) -> None:
    spec = op_db_spec("reg", ["softmax", "log_softmax", "add", "mul"],
                      exclude=["softmax.with_dtype", "log_softmax.with_dtype"])
    change = softmax_change
    state = tmp_path / "state"

    head_only = relay("replay", str(change), "--spec", str(spec), "--json",
                      "--head-env", f"current+faults={FAULT}", "--base-env", "current",
                      state=state, cwd=tmp_path)
    assert head_only.returncode == 1, head_only.stderr[-3000:]
    run = json.loads(head_only.stdout)
    verdicts = {v["id"]: v["verdict"] for v in run["verdicts"]}
    softmax = "reg::TestCommon::test_compare_cpu[softmax-float16]"
    assert verdicts[softmax] == "NEW"
    # exactly the tests that exercise aten::_softmax are NEW (log_softmax uses _log_softmax)
    assert {i for i, v in verdicts.items() if v == "NEW"} == {softmax}
    assert verdicts["reg::TestCommon::test_compare_cpu[mul-float16]"] == "OK"
    assert run["conclusion"] == "failure"
    assert run["environments"]["head"]["faults"] == FAULT
    assert run["environments"]["head"]["torch_version"].startswith("2.13.0")
    assert "head ran on torch 2.13.0" in head_only.stderr
    assert f"(current+faults={FAULT} — the installed torch" in head_only.stderr
    assert "base ran on torch 2.13.0" in head_only.stderr and "no base run" not in head_only.stderr
    assert f"NEW {softmax}" in head_only.stderr

    both = relay("replay", str(change), "--spec", str(spec), "--json",
                 "--head-env", f"current+faults={FAULT}", "--base-env", f"current+faults={FAULT}",
                 state=state, cwd=tmp_path)
    assert both.returncode == 0, both.stderr[-3000:]
    run2 = json.loads(both.stdout)
    v2 = {v["id"]: v["verdict"] for v in run2["verdicts"]}
    assert v2[softmax] == "BROKEN_TRUNK" and run2["conclusion"] == "success"

    # a third run on the same base and base environment reuses the stored baseline
    again = relay("replay", str(change), "--spec", str(spec), "--json",
                  "--head-env", "current", "--base-env", f"current+faults={FAULT}",
                  state=state, cwd=tmp_path)
    run3 = json.loads(again.stdout)
    assert run3["baseline_run"] == run2["baseline_run"]
    assert {v["id"]: v["verdict"] for v in run3["verdicts"]}[softmax] == "FIXED"

    engine = make_engine(get_settings(state_dir=state).database_url)
    try:
        with make_session_factory(engine)() as session:
            assert {v.verdict for v in load_verdicts(session, run["id"])} >= {"NEW", "OK"}
            assert load_environments(session, run["id"])["base"]["faults"] is None
    finally:
        engine.dispose()
