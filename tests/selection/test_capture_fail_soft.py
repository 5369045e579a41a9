"""Index capture is fail soft per item (issue 18): a spec that passes ``--strict`` but asks for a
dtype the device refuses selects, with the uncapturable item's reason, instead of crashing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import selection.index.op_index as index_mod
from selection.attribution.rules import OpCatalog
from selection.index.op_index import TestOpIndex
from selection.models import ChangedFile, ChangeSet
from selection.stage import Candidate, SelectionState
from selection.stages.memory import Memory
from tests.selection.conftest import item
from tests.spec_text import compare_cpu_spec

NO_DTYPES = compare_cpu_spec(["add"], dtypes=None)
CHANGE = {"base": "b" * 40, "head": "c" * 40,
          "files": [{"filename": "aten/src/ATen/native/BinaryOps.cpp"}]}


def test_a_failing_capture_costs_its_item_only_and_is_cached(tmp_path: Path, monkeypatch) -> None:
    good, bad = item("add"), item("add", "float64")
    calls: list[str] = []

    def capture(it, device, **kw):
        calls.append(it.id)
        if it.dtype == "float64":
            raise TypeError("aten::empty_strided does not support dtype float64")
        return ["aten::add"]

    monkeypatch.setattr(index_mod, "capture_ops", capture)
    index = TestOpIndex.build([good, bad], device="cpu", cache_dir=tmp_path)
    assert index.entries == {good.id: ["aten::add"]}
    assert index.failures == {bad.id: "TypeError: aten::empty_strided does not support dtype float64"}
    again = TestOpIndex.build([good, bad], device="cpu", cache_dir=tmp_path)
    assert calls == [good.id, bad.id] and again.failures == index.failures  # cached, not retried

    catalog = OpCatalog(aten_ops=index.aten_ops, opinfos={"add": "add"}, generators={})
    memory = Memory(index, catalog, [good, bad])
    change = ChangeSet(base="b", head="c", files=[ChangedFile(filename="aten/src/ATen/native/BinaryOps.cpp")])
    state = SelectionState(changeset=change, candidates=tuple(Candidate(i, i.mode) for i in (good, bad)),
                           universe=2)
    kept = {c.item.id: c.reasons for c in memory.run(state).candidates}
    assert any("op index capture failed (TypeError: aten::empty_strided" in r for r in kept[bad.id])


def _relay(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "relay"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "RELAY_STATE_DIR": str(cwd / "state")})


def test_select_on_a_spec_without_supported_dtypes_succeeds_with_reasons(tmp_path: Path) -> None:
    spec = tmp_path / "nodtypes.yaml"
    spec.write_text(NO_DTYPES)
    change = tmp_path / "change.json"
    change.write_text(json.dumps(CHANGE))
    check = _relay(["specs", "check", "--strict", str(spec)], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{spec}:" in check.stdout and "warning: no global.supported_dtypes" in check.stdout
    assert "float64: 1" in check.stdout

    proc = _relay(["select", str(change), "--spec", str(spec), "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    selected = {t["id"]: t for t in json.loads(proc.stdout)["selected"]}
    f64 = selected["nodtypes::TestCommon::test_compare_cpu[add-float64]"]
    assert f64["mode"] == "skip"
    assert any(r.startswith("memory: op index capture failed (SpyreDtypeError: ")
               and "float64" in r for r in f64["reasons"]), f64["reasons"]
    f16 = selected["nodtypes::TestCommon::test_compare_cpu[add-float16]"]
    assert f16["mode"] == "mandatory_success" and not any("capture failed" in r for r in f16["reasons"])
