"""Source-tree mode honours a torch-spyre config at collection (RFC 1287): supported_ops keep the
@ops lists, include injects, exclude/dtype/skip variants are not built, force_xfail per op and dtype,
dtype precedence, glob names, ${TORCH_DEVICE_ROOT}, diagnostics with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_specs.upstream.rules import device_root, name_matches, substitute
from test_specs.upstream.tree import collect

FAKE_UNARY = '''
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase

_UNARY = [o for o in op_db if o.name in ("abs", "exp", "sin", "cos") and not o.variant_test_name]


class TestFakeUnary(TestCase):
    @ops(_UNARY, allowed_dtypes=(torch.float16, torch.float32, torch.int64))
    def test_unary(self, device, dtype, op):
        x = torch.ones(3, dtype=dtype)
        self.assertEqual(op(x.to(device)).cpu(), op(x))

    @ops([o for o in _UNARY if o.name == "abs"], allowed_dtypes=(torch.float32,))
    def test_inject(self, device, dtype, op):
        x = torch.ones(3, dtype=dtype)
        self.assertEqual(op(x.to(device)).cpu(), op(x))

    @dtypes(torch.float16, torch.float32, torch.bfloat16)
    def test_dtypes(self, device, dtype):
        pass

    def test_unlisted(self, device):
        pass

    def test_listed_skip(self, device):
        pass


class TestModuleLikeThing(TestCase):
    def test_forward(self):
        pass


instantiate_device_type_tests(TestFakeUnary, globals())
'''

DEV_TEST = '''
from torch.testing._internal.common_utils import TestCase


class TestDev(TestCase):
    def test_ok(self):
        pass
'''

SPEC = """test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_fake_unary.py
      unlisted_test_mode: skip
      tests:
        - names: [TestFakeUnary::test_unary]
          edits:
            ops: {exclude: [{name: sin}]}
        - names: [TestFakeUnary::test_inject]
          edits:
            ops: {include: [{name: neg}]}
        - names: [TestFakeUnary::test_dtypes]
          edits:
            dtypes: {include: [{name: bfloat16}], exclude: [{name: half}]}
        - names: [TestFakeUnary::test_listed_skip]
          mode: skip  # not run on Spyre
        - names: ['*ModuleLike*::test_forward']
          mode: xfail   # planted xfail
        - names: [TestFakeUnary::test_missing]
    - path: ${TORCH_ROOT}/test/test_absent.py
    - path: ${TORCH_DEVICE_ROOT}/tests/test_dev.py
      unlisted_test_mode: mandatory_success
  global:
    supported_dtypes:
      - half
      - long
      - name: float32
        force_xfail: true  # fp32 is downcast to fp16
    supported_ops:
      - {name: abs, dtypes: [float16, int64]}
      - name: exp
        force_xfail: true   # exp inaccurate in fp16
      - {name: sin}
"""


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    pytest.importorskip("spyre_backend")
    root, dev = tmp_path / "pytorch", tmp_path / "torch-spyre"
    (root / "test").mkdir(parents=True)
    (dev / "tests").mkdir(parents=True)
    (root / "test" / "test_fake_unary.py").write_text(FAKE_UNARY)
    (dev / "tests" / "test_dev.py").write_text(DEV_TEST)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    monkeypatch.setenv("TORCH_DEVICE_ROOT", str(dev))
    return root, spec


def test_collection_honours_the_config(tree: tuple[Path, Path]) -> None:
    root, spec = tree
    items, problems = collect([spec], root)
    got = {i.id.split("::", 2)[2]: (i.op, i.dtype, i.mode, i.reason) for i in items}
    assert got == {
        # supported_ops keeps abs/exp/sin of the @ops list (cos unlisted); sin excluded by the entry;
        # abs limited to its own dtypes (float16, int64); exp force_xfail on every dtype
        "TestFakeUnarySPYRE::test_unary_abs_spyre_float16": ("abs", "float16", "mandatory_success", None),
        "TestFakeUnarySPYRE::test_unary_abs_spyre_int64": ("abs", "int64", "mandatory_success", None),
        "TestFakeUnarySPYRE::test_unary_exp_spyre_float16": ("exp", "float16", "xfail", "exp inaccurate in fp16"),
        "TestFakeUnarySPYRE::test_unary_exp_spyre_float32": ("exp", "float32", "xfail", "exp inaccurate in fp16"),
        "TestFakeUnarySPYRE::test_unary_exp_spyre_int64": ("exp", "int64", "xfail", "exp inaccurate in fp16"),
        # neg injected into test_inject's @ops list; abs has no dtype left (float32 only allowed)
        "TestFakeUnarySPYRE::test_inject_neg_spyre_float32": ("neg", "float32", "xfail",
                                                              "fp32 is downcast to fp16"),
        # bfloat16 included beyond supported_dtypes, half excluded, float32 force_xfail by dtype
        "TestFakeUnarySPYRE::test_dtypes_spyre_bfloat16": (None, "bfloat16", "mandatory_success", None),
        "TestFakeUnarySPYRE::test_dtypes_spyre_float32": (None, "float32", "xfail", "fp32 is downcast to fp16"),
        # a glob class pattern names a plain TestCase test
        "TestModuleLikeThing::test_forward": (None, "none", "xfail", "planted xfail"),
        # ${TORCH_DEVICE_ROOT} from the environment
        "TestDev::test_ok": (None, "none", "mandatory_success", None),
    }  # test_unlisted (unlisted skip) and test_listed_skip (mode skip) are not built at all
    assert [p.split(": ", 1)[1] for p in problems] == [
        "warning: name 'TestFakeUnary::test_missing' matches no test in test/test_fake_unary.py",
        f"warning: path '${{TORCH_ROOT}}/test/test_absent.py' matches no file under {root}"]
    assert [p.split(":")[1:3] for p in problems] == [["19", "19"], ["20", "13"]]


def test_strict_makes_diagnostics_errors(tree: tuple[Path, Path]) -> None:
    root, spec = tree
    with pytest.raises(RuntimeError, match=r"spec\.yaml:19:19: error: name 'TestFakeUnary::test_missing'"):
        collect([spec], root, strict=True)


def test_path_matching_nothing_without_any_file(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_nope.py\n")
    assert collect([spec], tmp_path)[0] == []
    with pytest.raises(RuntimeError, match=r"s\.yaml:3:13: error: path .* matches no file"):
        collect([spec], tmp_path, strict=True)


def test_torch_device_root_is_the_specs_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCH_DEVICE_ROOT", raising=False)
    repo = tmp_path / "torch-spyre"
    (repo / ".git").mkdir(parents=True)
    (repo / "tests" / "configs").mkdir(parents=True)
    spec = repo / "tests" / "configs" / "c.yaml"
    assert device_root(spec) == repo.resolve()
    assert substitute("${TORCH_DEVICE_ROOT}/tests/x.py", tmp_path, spec) == f"{repo.resolve()}/tests/x.py"
    assert substitute("${TORCH_DEVICE_ROOT}/tests/x.py", tmp_path, tmp_path / "loose.yaml") is None
    monkeypatch.setenv("TORCH_DEVICE_ROOT", "/opt/ts")
    assert substitute("${TORCH_DEVICE_ROOT}/t.py", tmp_path, spec) == "/opt/ts/t.py"
    assert substitute("test/t.py", tmp_path) == f"{tmp_path}/test/t.py"


def test_name_patterns_are_globs_or_regexes() -> None:
    assert name_matches("*TestModule*::test_forward", "TestModuleSPYRELike", "test_forward")
    assert not name_matches("*TestModule*::test_forward", "TestOther", "test_forward")
    assert name_matches("TestOps::test_rope_fms_.*", "TestOps", "test_rope_fms_fp16")
    assert name_matches("test_exact", "AnyClass", "test_exact")
    assert not name_matches("TestA::test_x", "TestB", "test_x")


FAKE_MODULES = '''
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase

_SOME = [m for m in module_db if m.name in ("nn.Linear", "nn.ReLU", "nn.Tanh")]


class TestModule(TestCase):
    @modules(_SOME, allowed_dtypes=(torch.float32,))
    def test_forward(self, device, dtype, module_info, training):
        pass

    @modules(_SOME, allowed_dtypes=(torch.float32,))
    def test_other(self, device, dtype, module_info, training):
        pass


instantiate_device_type_tests(TestModule, globals())
'''

MODULES_SPEC = """test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_fake_modules.py
      unlisted_test_mode: mandatory_success
      tests:
        - names: ['*TestModule*::test_forward']
          edits:
            modules:
              include:
                - {name: torch.nn.Linear}
                - name: Custom_0
                  module_path: torch.nn.Identity
  global:
    supported_modules: [{name: torch.nn.Linear}, {name: torch.nn.ReLU}]
"""


def test_modules_lists_follow_supported_modules_and_include(tmp_path: Path) -> None:
    pytest.importorskip("spyre_backend")
    root = tmp_path / "pytorch"
    (root / "test").mkdir(parents=True)
    (root / "test" / "test_fake_modules.py").write_text(FAKE_MODULES)
    spec = tmp_path / "mods.yaml"
    spec.write_text(MODULES_SPEC)
    items, _ = collect([spec], root)
    names = sorted(i.id.split("::")[-1] for i in items)
    # test_forward: only the included ModuleInfo (Custom_0 runs as a captured item, not here);
    # test_other (unlisted): supported_modules keeps Linear and ReLU, Tanh is not built
    assert [n for n in names if "forward" in n] and all("Linear" in n for n in names if "forward" in n)
    other = [n for n in names if "other" in n]
    assert any("Linear" in n for n in other) and any("ReLU" in n for n in other)
    assert not any("Tanh" in n for n in names)
