"""The runner: pytest with xdist workers, live results from pytest-reportlog, crash and hang containment."""

from __future__ import annotations

from pathlib import Path

from test_specs.reports.records import ReportLog
from test_specs.run.runner import run_items, shard_split
from test_specs.values.results import OUTCOMES, TestResult

TINY = "tiny_spec"


def test_run_items_outcomes_including_crash_and_flaky(fixtures: Path, fault_templates: str, tmp_path: Path) -> None:
    ids = [
        f"{TINY}::TestFault::test_flaky[sub-float32]",
        f"{TINY}::TestCommon::test_compare_cpu[add-float32]",
        f"{TINY}::TestFault::test_abort[neg-float32]",
        f"{TINY}::TestFault::test_fail[abs-float32]",
        f"{TINY}::TestCommon::test_compare_cpu[nope-float32]",
    ]
    live: list[TestResult] = []
    results = run_items(ids, [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "w", device="cpu", reruns=1,
                        timeout_s=60, shards=2, env={"SPYRE_SPEC_TEMPLATES": fault_templates,
                                           "SPYRE_TEST_FLAKY_STATE": str(tmp_path / "flaky.state")},
                        on_result=live.append)
    assert [r.id for r in results] == ids  # the order of item_ids
    got = {r.id: r for r in results}
    assert got[ids[0]].outcome == "flaky" and got[ids[0]].attempts == 2
    assert got[ids[1]].outcome == "passed" and got[ids[1]].duration_ms > 0
    crashed = got[ids[2]]
    assert crashed.outcome == "crashed" and "SIGABRT" in (crashed.message or "")
    assert crashed.upstream == "tests/fixtures/fault_templates.py::test_abort" and crashed.op == "neg"
    assert "SIGABRT" in (crashed.detail or "") and got[ids[1]].detail is None  # failure output
    assert got[ids[3]].outcome == "xfailed" and got[ids[3]].mode == "xfail"
    assert got[ids[4]].outcome == "failed" and "not collected" in (got[ids[4]].message or "")
    assert {r.id for r in live} == set(ids)  # on_result once per id
    assert all(r.outcome in OUTCOMES for r in results)
    # two xdist workers; the abort cost one worker, which xdist replaced for the tests not yet
    # run: its crash report is in the report log, and the JUnit XML for users lists every test run
    # (with the spec properties, except the crashed one: its report comes from the xdist controller)
    # (sorted ids dealt round-robin is the split for runs spread over machines)
    assert shard_split(ids, 2)[0] == [ids[1], ids[2], ids[0]]
    assert '"when": "???"' in (tmp_path / "w" / "reportlog.jsonl").read_text()
    junit = (tmp_path / "w" / "junit.xml").read_text()
    assert all(f'name="id" value="{i}"' in junit for i in (ids[0], ids[1], ids[3]))
    assert 'name="test_abort[neg-float32]"' in junit


def test_shard_split_is_deterministic_and_complete() -> None:
    ids = [f"s::T::t[op{i}-float16]" for i in range(7)]
    parts = shard_split(list(reversed(ids)), 3)
    assert parts == shard_split(ids, 3)  # independent of input order
    assert sorted(x for p in parts for x in p) == sorted(ids) and [len(p) for p in parts] == [3, 2, 2]
    assert shard_split(ids[:1], 4) == [ids[:1]]  # empty shards dropped
    import pytest

    with pytest.raises(ValueError):
        shard_split(ids, 0)


def test_reportlog_records_become_results(tmp_path: Path) -> None:
    """pytest-reportlog lines → one result per finished test: the id from the items file (or the
    report's properties), outcome by pytest's rules, reruns, xdist's crash report."""
    import json

    def rep(nodeid: str, when: str, outcome: str, duration: float = 0.0, **kw: object) -> str:
        return json.dumps({"$report_type": "TestReport", "nodeid": nodeid, "when": when, "outcome": outcome,
                           "duration": duration, "longrepr": kw.pop("longrepr", None), **kw}) + "\n"

    a, b, c, d = "s::T::t[a-float16]", "s::T::t[b-float16]", "s::T::t[c-float16]", "s::T::t[d-float16]"
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"nodeid": f"s.yaml::{i.split('::', 1)[1]}",
                                         "item": {"id": i, "upstream": "u", "op": i[8], "dtype": "float16"}}) + "\n"
                             for i in (a, b, c, d)))
    log = tmp_path / "reportlog.jsonl"
    log.write_text(
        rep("s.yaml::T::t[a-float16]", "setup", "passed", 0.1) + rep("s.yaml::T::t[a-float16]", "call", "failed", 0.4,
                                                                     longrepr="boom\ntrace")
        + rep("s.yaml::T::t[a-float16]", "teardown", "passed")
        + rep("s.yaml::T::t[b-float16]", "setup", "skipped", longrepr=["s.yaml", 1, "why"], wasxfail="")
        + rep("s.yaml::T::t[b-float16]", "teardown", "passed")
        + rep("s.yaml::T::t[c-float16]", "setup", "passed") + rep("s.yaml::T::t[c-float16]", "call", "rerun",
                                                                  longrepr="first attempt fails")
        + rep("s.yaml::T::t[c-float16]", "teardown", "passed") + rep("s.yaml::T::t[c-float16]", "setup", "passed")
        + rep("s.yaml::T::t[c-float16]", "call", "passed") + rep("s.yaml::T::t[c-float16]", "teardown", "passed")
        + rep("s.yaml::T::t[d-float16]", "???", "failed", 2.0, longrepr="pytest process died (killed by SIGSEGV)")
        + rep("other.yaml::x", "teardown", "passed", user_properties=[["id", "o::x"]]) + '{"half": ')
    got = {r.id: r for r in ReportLog(log, items).poll()}
    assert got[a].outcome == "failed" and got[a].duration_ms == 500.0 and got[a].message == "boom"
    assert got[b].outcome == "xfailed" and got[b].op == "b"
    assert got[c].outcome == "flaky" and got[c].attempts == 2
    assert got[d].outcome == "crashed" and "SIGSEGV" in (got[d].message or "") and got[d].duration_ms == 2000.0
    assert got["o::x"].outcome == "passed"  # no items-file entry: the id from the report's properties
    assert len(got) == 5  # the half-written last line waits for the next poll


def test_device_crash_via_sim_faults_and_timeout(fixtures: Path, fault_templates: str, tmp_path: Path) -> None:
    """A device ``os.abort()`` (``SPYRE_SIM_FAULTS``) costs one test; a hang is ``timed_out``."""
    import pytest

    pytest.importorskip("spyre_backend")
    from test_specs.expand.universe import spec_paths_default

    core = [p for p in spec_paths_default() if p.stem == "opinfo_core"]  # the small default spec

    ids = ["opinfo_core::TestCommon::test_compare_cpu[add-float16]",
           "opinfo_core::TestCommon::test_compare_cpu[neg-float16]",
           f"{TINY}::TestFault::test_hang[mul-float32]"]
    results = run_items(ids, [*core, fixtures / "tiny_spec.yaml"], workdir=tmp_path,
                        device="spyre", timeout_s=3, reruns=0,
                        env={"SPYRE_SIM_FAULTS": "aten::add:abort", "SPYRE_SPEC_TEMPLATES": fault_templates})
    assert [(r.id, r.outcome) for r in results] == [(ids[0], "crashed"), (ids[1], "passed"), (ids[2], "timed_out")]
    assert "SIGABRT" in (results[0].message or "") and results[0].op == "add" and results[0].dtype == "float16"
    assert "Timeout" in (results[2].message or "")


def test_exit_without_signal_and_uninterruptible_hang(fixtures: Path, fault_templates: str, tmp_path: Path,
                                                      monkeypatch) -> None:
    """``os._exit`` in a test is ``crashed`` with its exit code; a hang pytest-timeout cannot
    interrupt (SIGALRM blocked) is ended by the watchdog ``timeout_s + HANG_GRACE_S`` after it
    started and is ``timed_out``; the other tests of the run still run."""
    from test_specs.run import runner

    monkeypatch.setattr(runner, "HANG_GRACE_S", 2.0)
    ids = [f"{TINY}::TestFault::test_exit[exp-float32]", f"{TINY}::TestFault::test_hang_hard[cos-float32]",
           f"{TINY}::TestCommon::test_compare_cpu[add-float32]"]
    results = run_items(ids, [fixtures / "tiny_spec.yaml"], workdir=tmp_path, device="cpu", timeout_s=2, reruns=0,
                        env={"SPYRE_SPEC_TEMPLATES": fault_templates})
    assert [(r.id, r.outcome) for r in results] == [(ids[0], "crashed"), (ids[1], "timed_out"), (ids[2], "passed")]
    assert "exit code 3" in (results[0].message or "")
    assert "Timeout" in (results[1].message or "") and results[1].duration_ms >= 4000


def test_generate_maps_measured_outcomes_to_justified_modes() -> None:
    from test_specs.authoring.generate import build, cause

    mode, reason, issue = cause("failed", "add [float16] sample 0: device raised SpyreUnsupportedOpError: "
                                "spyre: aten::resize_ is not supported on Spyre: no resize", "TestCommon::test_out")
    assert (mode, issue) == ("xfail", "spyre-sim unsupported: aten::resize_") and "aten::resize_" in reason
    assert cause("crashed", "died", "T::t")[0] == "skip"
    assert cause("skipped", "no samples", "T::t") == ("skip", "no samples", "upstream T::t skips too")
    differs = "x [float32] sample 1: device output differs from CPU"
    assert cause("failed", differs, "T::t")[2] == "spyre-sim numerics: T::t"
    doc = build([{"id": "s::T::t[softmax-float16]", "outcome": "passed"},
                 {"id": "s::T::t[softmax.with_dtype-float16]", "outcome": "failed",
                  "message": "device output differs"}],
                "s", modules=False, max_samples=2, plain_ops={"softmax"})
    tests = doc["test_suite_config"]["files"][0]["tests"]
    assert tests[0]["edits"]["ops"]["include"] == [{"name": "softmax", "exact": True}]
    assert tests[1]["mode"] == "xfail"
    assert tests[1]["edits"]["dtypes"]["exclude"] == [{"name": "bfloat16"}, {"name": "float32"}]
    # a capability rule names the rule and the torch-spyre config that declares real Spyre fails too
    config = "tests/configs/upstream_tests/test_view_ops_config.yaml"
    mode, reason, issue = cause("failed", "x [float16] sample 0: device raised SpyreCompileError: spyre: "
                                "aten::_copy_from (float16): Error: In-device copy not implemented "
                                f"[capability in_device_copy; from torch-spyre {config}]", "T::t")
    assert mode == "xfail" and issue == f"torch-spyre {config}: in_device_copy"
    assert reason.startswith("aten::_copy_from is refused on Spyre: Error: In-device copy not implemented")
    # an uninitialized output is random: skip, whatever one measurement said (issue 27)
    doc = build([{"id": "s::T::t[empty-float32]", "outcome": "passed"},
                 {"id": "s::T::t[new_empty-float32]", "outcome": "failed", "message": "differs"}],
                "s", modules=False, max_samples=2, plain_ops=set())
    [entry] = doc["test_suite_config"]["files"][0]["tests"]
    assert entry["mode"] == "skip" and "uninitialized" in entry["reason"]
    assert entry["edits"]["ops"]["include"] == [{"name": "empty"}, {"name": "new_empty"}]



def test_pytest_processes_do_not_outlive_the_runner_process(fixtures: Path, fault_templates: str,
                                                            tmp_path: Path) -> None:
    """A process that exits in the middle of a run (``relay serve`` after SIGTERM and its
    shutdown grace) takes its pytest subprocess with it instead of leaving it running."""
    import subprocess
    import sys
    import time

    work = tmp_path / "w"
    hang = f"{TINY}::TestFault::test_hang[mul-float32]"
    script = f"""
import pathlib, threading, time
from test_specs.run.runner import run_items
work = pathlib.Path({str(work)!r})
threading.Thread(target=run_items, daemon=True, args=([{hang!r}], [{str(fixtures / "tiny_spec.yaml")!r}]),
                 kwargs=dict(workdir=work, device="cpu", timeout_s=600, reruns=0,
                             env={{"SPYRE_SPEC_TEMPLATES": {fault_templates!r}}})).start()
while not list(work.rglob("pytest.log")):
    time.sleep(0.1)
time.sleep(2)  # pytest is running the hanging test; now leave as a server does
"""
    subprocess.run([sys.executable, "-c", script], timeout=120, check=True)
    deadline = time.monotonic() + 5
    while (left := subprocess.run(["pgrep", "-f", str(work)], capture_output=True, text=True).stdout.strip()):
        assert time.monotonic() < deadline, f"pytest outlived the runner process: {left}"
        time.sleep(0.1)


def test_failure_output_keeps_the_crash_message_and_traceback_lines() -> None:
    from test_specs.reports.records import failure_output

    failed = {"outcome": "failed", "when": "call", "longrepr": {
        "reprcrash": {"message": "AssertionError: max abs error 0.5 > atol 0.001"},
        "reprtraceback": {"reprentries": [{"data": {"lines": ["    assert close(a, b)", "E   AssertionError"]}}]}}}
    passed = {"outcome": "passed", "when": "teardown", "longrepr": None}
    text = failure_output([failed, passed])
    assert text.splitlines() == ["AssertionError: max abs error 0.5 > atol 0.001", "    assert close(a, b)",
                                 "E   AssertionError"]
    assert failure_output([passed]) is None


def test_run_modes_override_the_spec_modes_in_every_record(fixtures: Path, fault_templates: str,
                                                           tmp_path: Path) -> None:
    """``modes`` (stage 3's classification) decides how an item runs: the spec's xfail item run
    as mandatory_success fails; a must-pass item predicted xfail that passes is xpassed; an id
    without a rule keeps its spec mode.  Results, JUnit properties and the items file agree."""
    from test_specs.values.planned import ModeRule

    fail, add = f"{TINY}::TestFault::test_fail[abs-float32]", f"{TINY}::TestCommon::test_compare_cpu[add-float32]"
    flaky = f"{TINY}::TestFault::test_flaky[sub-float32]"
    modes = {fail: ModeRule(mode="mandatory_success"),
             add: ModeRule(mode="xfail", reason="selection: unsupported op: aten::add (test)")}
    results = run_items([fail, add, flaky], [fixtures / "tiny_spec.yaml"], workdir=tmp_path / "w",
                        device="cpu", reruns=1, timeout_s=60, modes=modes,
                        env={"SPYRE_SPEC_TEMPLATES": fault_templates,
                             "SPYRE_TEST_FLAKY_STATE": str(tmp_path / "flaky.state")})
    got = {r.id: r for r in results}
    assert (got[fail].mode, got[fail].outcome) == ("mandatory_success", "failed")
    assert (got[add].mode, got[add].outcome) == ("xfail", "xpassed")
    assert (got[flaky].mode, got[flaky].outcome) == ("mandatory_success", "flaky")
    junit = (tmp_path / "w" / "junit.xml").read_text()
    assert 'value="selection: unsupported op: aten::add (test)"' in junit
    assert "the template always fails" not in junit  # the spec's xfail reason went with its mode
