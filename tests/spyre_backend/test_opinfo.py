"""The OpInfo comparison, the committed outcome table and its loader, and the overhead bench."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from spyre_backend import faults, opinfo_results
from spyre_backend.faults import parse_faults
from spyre_backend.opinfo_check import _read_log, select_opinfos
from spyre_backend.opinfo_compare import check_op, max_errors
from spyre_backend.opinfo_results import STATUSES, Outcome


def _one(name: str):
    (opinfo,) = [o for o in select_opinfos([name]) if not o.variant_test_name]
    return opinfo


def test_pass_and_not_implemented_outcomes():
    add = check_op(_one("add"), torch.float16)
    assert add.status == "pass" and add.samples > 1 and add.subject == "add"
    flip = check_op(_one("flip"), torch.float32)
    assert flip.status == "not_implemented"
    assert flip.aten_op == "aten::flip" and "no Spyre kernel" in flip.reason


def test_mismatch_records_max_errors(monkeypatch):
    monkeypatch.setattr(faults, "FAULTS", parse_faults("aten::neg:offset=0.5"))
    out = check_op(_one("neg"), torch.float16)
    assert out.status == "mismatch" and out.mismatched == out.samples
    assert out.max_abs_err == pytest.approx(0.5, abs=1e-2)
    assert max_errors(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0])) == (2.0, 0.5)


def test_cpu_reference_error_and_skip():
    class Broken:
        name, variant_test_name = "broken", "v"

        def supported_dtypes(self, device):
            return {torch.float16}

        def sample_inputs(self, device, dtype):
            from torch.testing._internal.opinfo.core import SampleInput

            yield SampleInput(torch.ones(2, dtype=dtype))

        def __call__(self, x):
            raise ValueError("bad sample")

    out = check_op(Broken(), torch.float16)
    assert (out.subject, out.status) == ("broken.v", "cpu_reference_error") and "bad sample" in out.reason
    assert check_op(Broken(), torch.float32).status == "skip"


def test_table_round_trip(tmp_path):
    rows = [
        Outcome("add", "float16", "pass", samples=3),
        Outcome("pow", "float32", "mismatch", samples=9, mismatched=2, max_abs_err=1.5, max_rel_err=0.25),
        Outcome("index_put", "float16", "not_implemented", samples=1, aten_op="aten::_index_put_impl_", reason="r"),
    ]
    path = tmp_path / "t.json"
    opinfo_results.dump(rows, path, {"torch": torch.__version__})
    table = opinfo_results.load_file(path)
    assert table == {(r.subject, r.dtype): r for r in rows}
    assert json.loads(path.read_text())["format"] == 1
    assert opinfo_results.summary(table)["float16"]["pass"] == 1


def test_committed_table_covers_op_db_in_float16_and_float32():
    from torch.testing._internal.common_methods_invocations import op_db

    from spyre_backend.opinfo_compare import subject_name

    table = opinfo_results.load()
    assert {o.status for o in table.values()} <= set(STATUSES)
    subjects = {subject_name(o) for o in op_db}
    assert {s for s, _ in table} == subjects
    assert all((s, d) in table for s in subjects for d in ("float16", "float32"))
    assert table[("add", "float16")].passed
    assert table[("flip", "float16")].aten_op == "aten::flip"  # a kernel Spyre lacks
    # index_put's out-of-place form clones its input on the device first: an in-device copy
    assert table[("index_put", "float16")].aten_op == "aten::_copy_from"
    for o in table.values():
        if o.status == "not_implemented":
            assert o.reason
        if o.status == "mismatch":
            assert o.mismatched and o.samples


def test_crashed_worker_pair_is_found_in_the_log(tmp_path):
    log = tmp_path / "shard.jsonl"
    log.write_text(
        json.dumps({"event": "start", "subject": "a", "dtype": "float16"}) + "\n"
        + json.dumps({"event": "done", "subject": "a", "dtype": "float16", "status": "pass", "samples": 1}) + "\n"
        + json.dumps({"event": "start", "subject": "b", "dtype": "float16"}) + "\n"
    )
    done, crashed = _read_log(log)
    assert list(done) == [("a", "float16")] and crashed == ("b", "float16")


def test_bench_runs_both_devices_in_one_run():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import device_overhead

    totals = device_overhead.run(select_opinfos(["abs", "index_put"]), ["float16"])
    assert totals["pairs"] == 2
    assert totals["cpu"]["samples"] == totals["spyre"]["samples"] > 0
    text = device_overhead.report(totals)
    assert "ratio spyre/cpu" in text and "samples/s" in text
