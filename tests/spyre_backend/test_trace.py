"""The device trace (issue 28): with ``SPYRE_SIM_TRACE`` every aten overload reaching the device
is recorded under the running test, including an op the device rejects; without it nothing is
written."""

from __future__ import annotations

import json
from pathlib import Path

from spyre_backend.trace import read_trace

CODE = """
import os
import torch
import spyre_backend
a = torch.ones(4, 4, dtype=torch.float16).to("spyre")
os.environ["PYTEST_CURRENT_TEST"] = "/x/spec.yaml::TestCommon::test_a[mm] (call)"
(a @ a).sum()
os.environ["PYTEST_CURRENT_TEST"] = "/x/spec.yaml::TestCommon::test_b[add] (call)"
a + a
try:
    torch.linalg.svd(a)   # not supported on Spyre: still reached the device
except Exception:
    pass
"""


def test_trace_records_each_test_s_overloads(run_python, tmp_path: Path) -> None:
    done = run_python(CODE, env={"SPYRE_SIM_TRACE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    trace = read_trace(tmp_path.glob("trace-*.jsonl"))
    packets = {k: {op.split(".")[0] for op in v} for k, v in trace.items()}
    assert "aten::mm" in packets["spec.yaml::TestCommon::test_a[mm]"]  # as ``aten::mm.out``
    assert "aten::add" not in packets["spec.yaml::TestCommon::test_a[mm]"]
    b = trace["spec.yaml::TestCommon::test_b[add]"]
    assert "aten::add" in packets["spec.yaml::TestCommon::test_b[add]"] and "aten::mm" not in packets[
        "spec.yaml::TestCommon::test_b[add]"]
    assert any(op.startswith("aten::linalg_svd") or op.startswith("aten::_linalg_svd") for op in b), b


def test_no_trace_without_the_variable(run_python, tmp_path: Path) -> None:
    done = run_python(CODE + f"\nimport spyre_backend.trace as t\nassert not t.ACTIVE\nprint({str(tmp_path)!r})")
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_read_trace_unions_pieces_and_skips_torn_lines(tmp_path: Path) -> None:
    (tmp_path / "trace-1.jsonl").write_text(json.dumps({"test": "t", "ops": ["aten::mm"]}) + "\n{\"te")
    (tmp_path / "trace-2.jsonl").write_text(json.dumps({"test": "t", "ops": ["aten::t"]}) + "\n")
    assert read_trace(sorted(tmp_path.glob("*.jsonl"))) == {"t": {"aten::mm", "aten::t"}}


def test_collecting_sees_the_top_level_ops_in_process() -> None:
    import torch

    from spyre_backend.trace import collecting

    a = torch.ones(3, 3, dtype=torch.float16).to("spyre")
    with collecting() as ops:
        torch.stack([a, a])
    assert "aten::cat" in {o.split(".")[0] for o in ops}  # stack reaches the device as cat
    with collecting() as later:
        pass
    assert later == set()


def test_read_trace_keeps_nested_calls_apart(tmp_path: Path) -> None:
    line = {"test": "t", "ops": ["aten::view"], "nested": ["aten::as_strided"]}
    (tmp_path / "trace-1.jsonl").write_text(json.dumps(line) + "\n")
    assert read_trace([tmp_path / "trace-1.jsonl"]) == {"t": {"aten::view"}}
    assert read_trace([tmp_path / "trace-1.jsonl"], nested=True) == {"t": {"aten::view", "aten::as_strided"}}
