"""Upstream-style ``@ops`` tests instantiate and run on the spyre device."""

from __future__ import annotations

import unittest

import torch

import spyre_backend.testing

spyre_backend.testing.prepare_device_type_tests()

from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops  # noqa: E402
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

_OPS = [o for o in op_db if o.name in ("add", "mul", "nn.functional.relu", "index_put")]


def _generic_class() -> type:
    # Built inside a function so pytest does not collect the generic TestCase itself.
    class _GenericSpyre(unittest.TestCase):
        @ops(_OPS, allowed_dtypes=(torch.float16,))
        def test_runs(self, device, dtype, op):
            try:
                # index_put's int64 index samples come from torch.randint on the device, i.e.
                # aten::random_, which Spyre lacks: generation itself is unsupported.
                for sample in op.sample_inputs(device, dtype):
                    op(sample.input, *sample.args, **sample.kwargs)
            except NotImplementedError as exc:
                self.skipTest(str(exc))

    return _GenericSpyre


def test_instantiated_names_and_results():
    generic = _generic_class()
    scope: dict = {generic.__name__: generic}
    instantiate_device_type_tests(generic, scope, only_for="privateuse1")
    assert list(scope) == ["_GenericSpyreSPYRE"]
    cls = scope["_GenericSpyreSPYRE"]
    names = sorted(n for n in dir(cls) if n.startswith("test_runs"))
    assert "test_runs_add_spyre_float16" in names
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(cls).run(result)
    assert not result.errors and not result.failures, "\n".join(e[1] for e in result.errors + result.failures)
    skipped = [t.id() for t, _ in result.skipped]
    assert any("index_put" in s for s in skipped)
    assert result.testsRun == len(names)
