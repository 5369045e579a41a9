"""The runner: a pytest subprocess per batch, live results, crash recovery, JUnit parsing."""

from __future__ import annotations

from pathlib import Path

from test_specs.results import OUTCOMES, TestResult
from test_specs.runner import parse_junit, run_items, shard_split

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
    assert got[ids[3]].outcome == "xfailed" and got[ids[3]].mode == "xfail"
    assert got[ids[4]].outcome == "failed" and "not collected" in (got[ids[4]].message or "")
    assert {r.id for r in live} == set(ids)  # on_result once per id
    assert all(r.outcome in OUTCOMES for r in results)
    # two shard processes; the crash restarted its shard's pytest for the tests not yet run
    # (an aborted pytest writes no junit.xml; the restart does)
    # sorted ids dealt round-robin: shard 0 runs add, abort, flaky; shard 1 runs nope, fail
    assert shard_split(ids, 2)[0] == [ids[1], ids[2], ids[0]]
    assert (tmp_path / "w" / "shard-1" / "pytest.log").exists()
    assert (tmp_path / "w" / "shard-0" / "junit.restart1.xml").exists()


def test_shard_split_is_deterministic_and_complete() -> None:
    ids = [f"s::T::t[op{i}-float16]" for i in range(7)]
    parts = shard_split(list(reversed(ids)), 3)
    assert parts == shard_split(ids, 3)  # independent of input order
    assert sorted(x for p in parts for x in p) == sorted(ids) and [len(p) for p in parts] == [3, 2, 2]
    assert shard_split(ids[:1], 4) == [ids[:1]]  # empty shards dropped
    import pytest

    with pytest.raises(ValueError):
        shard_split(ids, 0)


def test_parse_junit_reads_ids_from_properties(tmp_path: Path) -> None:
    p = tmp_path / "j.xml"
    p.write_text(
        '<testsuites><testsuite><testcase classname="x" name="y" time="0.5">'
        '<properties><property name="id" value="s::T::t[a-float16]"/><property name="op" value="a"/></properties>'
        '<failure message="boom">trace</failure></testcase>'
        '<testcase classname="x" name="z" time="0"><properties><property name="id" value="s::T::t[b-float16]"/>'
        '</properties><skipped type="pytest.xfail" message="why"/></testcase>'
        '<testcase classname="x" name="w" time="0"/></testsuite></testsuites>')
    got = parse_junit(p)
    assert got["s::T::t[a-float16]"]["outcome"] == "failed" and got["s::T::t[a-float16]"]["duration_ms"] == 500.0
    assert got["s::T::t[b-float16]"]["outcome"] == "xfailed"
    assert len(got) == 2
    assert parse_junit(tmp_path / "missing.xml") == {}


def test_device_crash_via_sim_faults_and_timeout(fixtures: Path, fault_templates: str, tmp_path: Path) -> None:
    """A device ``os.abort()`` (``SPYRE_SIM_FAULTS``) costs one test; a hang is ``timed_out``."""
    import pytest

    pytest.importorskip("spyre_backend")
    from test_specs.expand import spec_paths_default

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


def test_generate_maps_measured_outcomes_to_justified_modes() -> None:
    from test_specs.generate import build, cause

    mode, reason, issue = cause("failed", "add [float16] sample 0: device raised SpyreUnsupportedOpError: "
                                "spyre: aten::resize_ is not supported on Spyre: no resize", "TestCommon::test_out")
    assert (mode, issue) == ("xfail", "spyre-sim unsupported: aten::resize_") and "aten::resize_" in reason
    assert cause("crashed", "died", "T::t")[0] == "skip"
    assert cause("skipped", "no samples", "T::t") == ("skip", "no samples", "upstream T::t skips too")
    assert cause("failed", "x [float32] sample 1: device output differs from CPU", "T::t")[2] == "spyre-sim numerics: T::t"
    doc = build([{"id": "s::T::t[softmax-float16]", "outcome": "passed"},
                 {"id": "s::T::t[softmax.with_dtype-float16]", "outcome": "failed", "message": "device output differs"}],
                "s", modules=False, max_samples=2, plain_ops={"softmax"})
    tests = doc["test_suite_config"]["files"][0]["tests"]
    assert tests[0]["edits"]["ops"]["include"] == [{"name": "softmax", "exact": True}]
    assert tests[1]["mode"] == "xfail" and tests[1]["edits"]["dtypes"]["exclude"] == [{"name": "bfloat16"}, {"name": "float32"}]



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
from test_specs.runner import run_items
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
