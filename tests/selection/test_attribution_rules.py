"""Attribution rules (``selection.attribution.rules.attribute``), one per kind of changed file,
each checked on the whole ``Impact`` it returns: what is opaque, what a per-op header or a
``native_functions.yaml`` hunk names, what an OpInfo definition or an op-stack Python patch
reaches, a native source by its name, and what nothing attributes."""

from __future__ import annotations

import pytest

from selection.attribution.rules import Impact, attribute, attribute_all
from selection.models import ChangedFile

CPP = "aten/src/ATen/native/SoftMax.cpp"
CMI = "torch/testing/_internal/common_methods_invocations.py"
REFS_PATCH = "@@ -10,3 +10,3 @@ def softmax(a, dim):\n-    return a\n+    return b\n"


def f(filename: str, **kw) -> ChangedFile:
    return ChangedFile(filename=filename, **kw)


@pytest.mark.parametrize(("name", "kind"), [
    ("torch/lib/libtorch_cpu.so", "compiled binary"), ("torch/lib/libc10.so.2", "compiled binary"),
    ("torch/_C.cpython-311-x86_64-linux-gnu.so", "compiled binary"), ("torch/lib/c10.dll", "compiled binary"),
    ("torch/lib/libtorch.dylib", "compiled binary"), ("torch/_C.pyd", "compiled binary"),
    ("torch/include/ATen/core/Tensor.h", "header of the compiled library"),
])
def test_compiled_files_and_their_headers_are_opaque(name, kind) -> None:
    assert attribute(f(name), None) == Impact(name, attributed=False, opaque=True,
                                              reasons=(f"{name}: {kind}, not attributable",))


@pytest.mark.parametrize(("name", "op"), [
    ("torch/include/ATen/ops/_softmax_native.h", "aten::_softmax"), ("torch/include/ATen/ops/add.h", "aten::add"),
    ("torch/include/ATen/ops/mm_cpu_dispatch.h", "aten::mm"), ("torch/include/ATen/ops/addmm_ops.h", "aten::addmm"),
])
def test_a_per_op_header_names_its_op(name, op) -> None:
    assert attribute(f(name), None) == Impact(name, frozenset({op}), reasons=(f"{name} → {op}",))


def test_native_functions_yaml_names_the_funcs_its_hunks_touch() -> None:
    name = "aten/src/ATen/native/native_functions.yaml"
    patch = "@@ -1,4 +1,4 @@\n-- func: add.Tensor(Tensor self) -> Tensor\n+- func: add.Tensor(Tensor s) -> Tensor\n" \
            "+- func: mul(Tensor self) -> Tensor\n   - func: sub(Tensor self) -> Tensor\n"
    assert attribute(f(name, patch=patch), None) == Impact(
        name, frozenset({"aten::add", "aten::mul"}), reasons=(f"{name} → aten::add", f"{name} → aten::mul"))
    assert attribute(f(name, patch="@@ -1 +1 @@\n-# a\n+# b\n"), None) == Impact(name, attributed=False)
    assert attribute(f(name), None) == Impact(name, attributed=False)  # no patch: nothing to read


def test_an_opinfo_definition_names_the_entries_and_generators_it_changes(catalog) -> None:
    got = attribute(f(CMI, symbols=["op_db[softmax]", "sample_inputs_softmax_variant", "op_db[unknown]", "helper"]),
                    catalog)
    entry = f"{CMI}: OpInfo entry softmax changed (test definition)"
    assert got == Impact(CMI, frozenset(), frozenset({"softmax"}),
                         (entry, f"{CMI}:sample_inputs_softmax_variant (sample inputs) → 1 OpInfos"),
                         why={"softmax": entry}, definition=True)
    assert attribute(f(CMI), catalog) == Impact(CMI, attributed=False, definition=True)
    generator = f"{CMI}:sample_inputs_softmax_variant (sample inputs) → 1 OpInfos"
    assert attribute(f(CMI, symbols=["sample_inputs_softmax_variant", "sample_inputs_other"]), catalog) == Impact(
        CMI, frozenset(), frozenset({"softmax"}), (generator,), why={"softmax": generator}, definition=True)
    assert attribute(f("torch/testing/_internal/opinfo/definitions/linalg.py", symbols=["helper"]), catalog) == \
        Impact("torch/testing/_internal/opinfo/definitions/linalg.py", definition=True)


@pytest.mark.parametrize("name", ["torch/_refs/__init__.py", "torch/_refs/__init__.pyi"])
def test_a_python_patch_without_symbols_is_read_for_its_changed_defs(name, catalog) -> None:
    assert attribute(f(name, patch=REFS_PATCH), catalog) == Impact(
        name, frozenset({"aten::_softmax"}), frozenset({"softmax"}), (f"{name}:softmax → aten::_softmax",))
    assert attribute(f(name, patch=REFS_PATCH, symbols=["mul"]), catalog).aten_ops == {"aten::mul"}


def test_a_native_source_is_attributed_by_its_name_as_a_broad_guess(catalog) -> None:
    reason = f"{CPP} (file name ~ tested op names) → aten::_softmax"
    expected = Impact(CPP, frozenset({"aten::_softmax"}), frozenset({"softmax"}), (reason,),
                      why={"softmax": reason}, broad=True)
    assert attribute(f(CPP), catalog) == expected
    nothing = "aten/src/ATen/native/Nothing.cpp"
    assert attribute(f(nothing), catalog) == Impact(nothing, attributed=False, canary=True, reasons=(
        f"{nothing}: not attributable to ops (no kernel in its patch or name); canaries",))


@pytest.mark.parametrize("name", ["setup.py", "aten/src/README.md", "torch/nn/modules/sub/x.py", "aten/src/Foo.cpp",
                                  "tools/x.cpp", "torch/nn/modules/x.txt"])
def test_a_file_no_rule_reaches_is_unattributed(name, catalog) -> None:
    assert attribute(f(name), catalog) == Impact(name, attributed=False)


def test_attribute_all_keeps_the_input_order(catalog) -> None:
    files = [f("torch/include/ATen/ops/add.h"), f("setup.py"), f("torch/include/ATen/ops/mul.h")]
    assert [i.filename for i in attribute_all(files, catalog)] == [x.filename for x in files]
