from __future__ import annotations

from pathlib import Path

from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.models import ChangedFile, ChangeSet
from selection.pipeline import refine, to_selection
from selection.policy.areas import areas_of
from selection.policy.profile import SPYRE_SIM
from selection.stage import Candidate, SelectionState, run_stage
from selection.stages.classify import Classify
from selection.stages.memory import Memory
from selection.stages.scope import Scope
from test_specs.values.results import TestResult


def state_for(universe, *files: ChangedFile) -> SelectionState:
    cs = ChangeSet(base="a", head="b", files=list(files))
    return SelectionState(changeset=cs, candidates=tuple(Candidate(i, i.mode) for i in universe),
                          universe=len(universe))


def ids(state):
    return {c.item.id for c in state.candidates}


def test_scope_docs_select_nothing(universe):
    st = run_stage(Scope(SPYRE_SIM), state_for(universe, ChangedFile(filename="docs/source/nn.rst"),
                                               ChangedFile(filename=".github/workflows/pull.yml")))
    assert st.candidates == ()
    assert st.stats[0].in_ == len(universe) and st.stats[0].out == 0


def test_scope_excluded_area_selects_nothing(universe):
    st = run_stage(Scope(SPYRE_SIM), state_for(universe, ChangedFile(filename="torch/_dynamo/eval_frame.py")))
    assert st.candidates == ()


def test_scope_ops_change_keeps_op_items_only(universe):
    st = Scope(SPYRE_SIM).run(state_for(universe, ChangedFile(filename="torch/_refs/__init__.py")))
    assert all(c.item.op for c in st.candidates) and len(st.candidates) == len(universe) - 1


def test_scope_shared_test_machinery_defers_to_canaries(universe):
    st = Scope(SPYRE_SIM).run(state_for(universe, ChangedFile(filename="torch/testing/_creation.py")))
    assert st.machinery == ("torch/testing/_creation.py",)
    assert any("selecting canaries" in n for n in st.notes)


def test_areas_of_cuda_kernel_is_cuda():
    assert areas_of("aten/src/ATen/native/cuda/SoftMax.cu")[0] == ("cuda",)


def test_memory_symbol_maps_to_aten_op(universe, index, catalog):
    f = ChangedFile(filename="torch/_refs/__init__.py", symbols=["softmax", "_helper_nobody_uses"])
    st = run_stage(Memory(index, catalog), Scope(SPYRE_SIM).run(state_for(universe, f)))
    kept = ids(st)
    assert {"core::compare_cpu[softmax-float16]", "core::compare_cpu[softmax-float32]"} <= kept
    assert "core::compare_cpu[add-float16]" not in kept
    assert st.signals.op_impacts["core::compare_cpu[softmax-float16]"]


def test_memory_header_names_aten_op_exactly(universe, index, catalog):
    f = ChangedFile(filename="torch/include/ATen/ops/mm_native.h", symbols=None)
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    # the op's tests, and the module whose backward runs aten::mm
    assert ids(st) == {"core::compare_cpu[matmul-float16]", "core::compare_cpu[nn.Linear-float16]"}


def test_memory_native_source_by_kernel_name(universe, index, catalog):
    f = ChangedFile(filename="aten/src/ATen/native/SoftMax.cpp")
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    assert {c.item.op for c in st.candidates} == {"softmax"}


def test_memory_changed_opinfo_entry_and_generator(universe, index, catalog):
    f = ChangedFile(filename="torch/testing/_internal/common_methods_invocations.py",
                    symbols=["op_db[mul]", "sample_inputs_softmax_variant"])
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    assert {c.item.op for c in st.candidates} == {"mul", "softmax"}
    assert "mul" in st.signals.changed_definitions


def test_memory_unattributable_native_source_selects_canaries_not_all(universe, index, catalog):
    f = ChangedFile(filename="aten/src/ATen/native/QwertyZxcv.cpp")
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    kept = {c.item.id for c in st.candidates}
    assert "core::compare_cpu[mul-float16]" not in kept  # add is the binary family's canary
    assert "core::compare_cpu[add-float16]" in kept and 0 < len(kept) < len(universe) - 1
    assert any("QwertyZxcv.cpp: not attributable" in n and "canaries" in n for n in st.notes)
    assert not any("fail soft" in n for n in st.notes)


def test_memory_binary_is_opaque(universe, index, catalog):
    f = ChangedFile(filename="torch/lib/libtorch_cpu.so")
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    assert st.candidates == ()
    assert any("opaque" in n for n in st.notes)


def test_classify_modes_and_reasons(universe, index, catalog):
    f = ChangedFile(filename="torch/_refs/__init__.py")  # symbols unknown: every op item kept
    st = state_for(universe, f)
    for stage in (Scope(SPYRE_SIM), Memory(index, catalog), Classify()):
        st = run_stage(stage, st)
    by_id = {c.item.id: c for c in st.candidates}
    assert by_id["core::compare_cpu[add-float64]"].mode == "skip"
    assert any("unsupported dtype" in r for r in by_id["core::compare_cpu[add-float64]"].reasons)
    xf = by_id["core::compare_cpu[index_put-float16]"]
    assert xf.mode == "xfail" and any("spec rule" in r for r in xf.reasons)
    sel = to_selection(st)
    assert [s.name for s in sel.stages] == ["scope", "memory", "classify"]
    assert all(t.reasons for t in sel.selected)
    assert sel.stages[2].out == sum(1 for t in sel.selected if t.mode != "skip")


class Boom(Heuristic):
    name = "boom"

    def score(self, candidate, signals):
        raise RuntimeError("index corrupt")


class Always(Heuristic):
    name = "always"

    def score(self, candidate, signals):
        return HeuristicResult(0.7, "always")


def test_failing_heuristic_selects_more_and_trial_mode_is_not_used(universe):
    st = Classify([Boom(), Always(trial_mode=True)]).run(state_for(universe))
    for c in st.candidates:
        assert c.score == 1.0
        assert any("heuristic boom failed" in r for r in c.reasons)
        assert any(r.startswith("trial: always 0.70") for r in c.reasons)


def _result(item, outcome, message=None):
    return TestResult(id=item.id, upstream=item.upstream, op=item.op, dtype=item.dtype,
                      outcome=outcome, message=message)


def test_refine_relabels_flaky_and_proposes_spec_edit(universe, tmp_path: Path):
    add, mul, ip = universe[2], universe[3], universe[5]
    results = [_result(add, "failed", "mismatch"), _result(mul, "failed", "mismatch"),
               _result(ip, "failed", "NotImplementedError: spyre: aten::_index_put_impl_ is not supported")]
    calls = []

    def executor(run_ids):
        calls.append(list(run_ids))
        return [_result(add, "passed"), _result(mul, "failed", "mismatch again")]

    st = refine(state_for(universe), results, executor, proposal_dir=tmp_path)
    assert calls == [[add.id, mul.id]]  # the unsupported-op failure is not rerun
    out = {r.id: r for r in st.results}
    assert out[add.id].outcome == "flaky" and out[add.id].attempts == 2
    assert out[mul.id].outcome == "failed"
    proposal = (tmp_path / "spec-proposals.yaml").read_text()
    assert "force_xfail: true" in proposal and "aten::_index_put_impl_" in proposal
    assert st.stats[-1].name == "refine" and st.stats[-1].in_ == 3


def test_scope_upstream_test_machinery_is_testing_area_only(universe):
    st = Scope(SPYRE_SIM).run(state_for(universe, ChangedFile(filename="torch/testing/_internal/common_utils.py")))
    assert st.candidates == ()  # op_db template items do not use common_utils


def test_opinfo_core_change_selects_one_canary_per_family(universe, index, catalog):
    f = ChangedFile(filename="torch/testing/_internal/opinfo/core.py", symbols=["OpInfo.sample_inputs"])
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    families = {r.split("(")[1].split(")")[0] for c in st.candidates for r in c.reasons
                if r.startswith("canary (")}
    assert families == {"pointwise binary", "activation", "linalg", "indexing", "module forward"}
    assert "core::compare_cpu[mul-float16]" not in {c.item.id for c in st.candidates}


def test_patch_hunks_give_symbols(universe, index, catalog):
    patch = ("@@ -10,6 +10,7 @@ def softmax(a, dim):\n     x = 1\n-    return a\n+    return a * 1\n"
             "@@ -40,3 +41,3 @@ def other():\n+def mul(a, b):\n+    return a\n")
    from selection.attribution.patch_symbols import symbols_from_patch

    assert symbols_from_patch(patch) == ["mul", "softmax"]
    f = ChangedFile(filename="torch/_refs/__init__.py", patch=patch)
    st = Memory(index, catalog).run(Scope(SPYRE_SIM).run(state_for(universe, f)))
    assert {c.item.op for c in st.candidates} == {"softmax", "mul"}


def test_areas_of_is_first_matching_rule_over_the_real_release_paths():
    import json
    from fnmatch import fnmatchcase

    from selection.policy.areas import RULES

    data = json.loads((Path(__file__).resolve().parents[2] / "examples/changes/torch-2.13.0..2.14.1.json").read_text())
    for f in data["files"]:
        first = next(((r.areas, r.why) for r in RULES if fnmatchcase(f["filename"], r.pattern)), None)
        assert areas_of(f["filename"]) == first, f["filename"]
